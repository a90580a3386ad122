package evidence

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// aggregateGroups refuses a group that is not an object while the groups
// are read; the list is bounded by the body alone, as before any decode.
var aggregateGroups = json.JoinUnmarshalers(rawInPlace, objectItems[rsclient.AggregationGroup]("aggregate's groups list", "buckets", 0))

// RenderAggregate renders an aggregation as a short text: the number, or a
// bounded list of buckets with other_count.
func RenderAggregate(body []byte) (string, error) {
	var a rsclient.Aggregation
	if err := decodeBody(body, "aggregate", "an aggregation", &a, aggregateGroups); err != nil {
		return "", err
	}
	var b strings.Builder
	what := string(a.Metric)
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
		if v == "" && a.Metric == rsclient.AggregationMetricCount && a.FilteredRecordCount != nil {
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
			val = fmt.Sprint(g.Count)
		}
		fmt.Fprintf(&b, "  %s: %s\n", Clip(scalarOf(g.Key), FieldValueChars), val)
	}
	if a.OtherCount != nil {
		fmt.Fprintf(&b, "other_count: %d (records outside the buckets shown by the RS limit)\n", *a.OtherCount)
	}
	return b.String(), nil
}

// scalarOf is the text of a raw scalar: a string unquoted, any other value
// as sent, "" when absent.
func scalarOf(raw jsontext.Value) string {
	var str string
	if raw.Kind() == '"' && json.Unmarshal(raw, &str, rsDecodeOptions) == nil {
		return str
	}
	return string(raw)
}
