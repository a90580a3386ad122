package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Aggregation is the part of an RS `aggregation` body the text uses.
type Aggregation struct {
	Stream      string          `json:"stream"`
	Metric      string          `json:"metric"`
	Field       *string         `json:"field"`
	GroupBy     *string         `json:"group_by"`
	GroupByTime *string         `json:"group_by_time"`
	Granularity *string         `json:"granularity"`
	Value       json.RawMessage `json:"value"`
	Groups      []struct {
		Key   json.RawMessage `json:"key"`
		Count json.RawMessage `json:"count"`
		Value json.RawMessage `json:"value"`
	} `json:"groups"`
	OtherCount          *int `json:"other_count"`
	FilteredRecordCount *int `json:"filtered_record_count"`
}

// RenderAggregate renders an aggregation as a short text: the number, or a
// bounded list of buckets with other_count.
func RenderAggregate(body []byte) (string, error) {
	if err := requireObject(body, "aggregate"); err != nil {
		return "", err
	}
	if groups, ok := Member(body, "groups"); ok {
		if err := firstNonObject(groups, "aggregate's groups list"); err != nil {
			return "", err
		}
	}
	var a Aggregation
	if err := json.Unmarshal(body, &a); err != nil {
		return "", fmt.Errorf("aggregate response is not an aggregation: %w", err)
	}
	var b strings.Builder
	what := a.Metric
	if a.Field != nil && *a.Field != "" {
		what += "(" + *a.Field + ")"
	}
	fmt.Fprintf(&b, "aggregate %s on stream %s", what, a.Stream)
	switch {
	case a.GroupBy != nil && *a.GroupBy != "":
		fmt.Fprintf(&b, " grouped by %s", *a.GroupBy)
	case a.GroupByTime != nil && *a.GroupByTime != "":
		g := ""
		if a.Granularity != nil {
			g = " per " + *a.Granularity
		}
		fmt.Fprintf(&b, " over %s%s", *a.GroupByTime, g)
	}
	if a.FilteredRecordCount != nil {
		fmt.Fprintf(&b, " (%d %s matched)", *a.FilteredRecordCount, noun(*a.FilteredRecordCount, "record", "records"))
	}
	b.WriteString("\n")
	if len(a.Groups) == 0 {
		v := scalarOf(a.Value)
		if v == "" && a.Metric == "count" && a.FilteredRecordCount != nil {
			v = fmt.Sprint(*a.FilteredRecordCount)
		}
		fmt.Fprintf(&b, "%s = %s\n", what, v)
		return b.String(), nil
	}
	for i, g := range a.Groups {
		if i == AggregateGroupsShown {
			fmt.Fprintf(&b, "(%d more %s in structured data)\n", len(a.Groups)-i, noun(len(a.Groups)-i, "bucket", "buckets"))
			break
		}
		val := scalarOf(g.Value)
		if val == "" {
			val = scalarOf(g.Count)
		}
		fmt.Fprintf(&b, "  %s: %s\n", Clip(scalarOf(g.Key), FieldValueChars), val)
	}
	if a.OtherCount != nil {
		fmt.Fprintf(&b, "other_count: %d (records outside the buckets shown by the RS limit)\n", *a.OtherCount)
	}
	return b.String(), nil
}

func scalarOf(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return ""
	}
	var str string
	if s[0] == '"' && json.Unmarshal(raw, &str) == nil {
		return str
	}
	return s
}
