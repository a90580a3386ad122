package demors

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

const (
	defaultGroupLimit = 10
	maxGroupLimit     = 100
)

var (
	metrics       = []string{"count", "sum", "min", "max", "count_distinct"}
	granularities = []string{"minute", "hour", "day", "week", "month", "quarter", "year"}
)

// bucketKey truncates a stored timestamp to the start of its calendar bucket (UTC) and
// formats it as the reference RS does: a date for day and coarser, a timestamp below.
func bucketKey(ts, granularity string) (string, error) {
	t, err := time.Parse(store.TimeLayout, ts)
	if err != nil {
		return "", fmt.Errorf("stored timestamp %q: %w", ts, err)
	}
	start := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch granularity {
	case "minute":
		return t.Truncate(time.Minute).Format(store.TimeLayout), nil
	case "hour":
		return t.Truncate(time.Hour).Format(store.TimeLayout), nil
	case "day":
	case "week": // ISO weeks start on Monday
		start = start.AddDate(0, 0, -((int(start.Weekday()) + 6) % 7))
	case "month":
		start = start.AddDate(0, 0, 1-t.Day())
	case "quarter":
		start = time.Date(t.Year(), (t.Month()-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC)
	case "year":
		start = time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	default:
		return "", fmt.Errorf("unknown granularity %q", granularity)
	}
	return start.Format("2006-01-02"), nil
}

// accumulator computes one metric over a set of values.
type accumulator struct {
	metric   string
	count    int
	sum      float64
	allInt   bool
	best     any // the least value for min, the greatest for max
	distinct map[string]bool
}

func newAccumulator(metric string) *accumulator {
	return &accumulator{metric: metric, allInt: true, distinct: map[string]bool{}}
}

func less(a, b any) bool {
	fa, aNum := toFloat(a)
	fb, bNum := toFloat(b)
	if aNum && bNum {
		return fa < fb
	}
	return fmt.Sprint(a) < fmt.Sprint(b)
}

func toFloat(v any) (float64, bool) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func (a *accumulator) add(v any) {
	a.count++
	if v == nil {
		return
	}
	switch a.metric {
	case "sum":
		if f, ok := toFloat(v); ok {
			a.sum += f
			if _, err := v.(json.Number).Int64(); err != nil {
				a.allInt = false
			}
		}
	case "min", "max":
		if a.best == nil || a.metric == "min" && less(v, a.best) || a.metric == "max" && less(a.best, v) {
			a.best = v
		}
	case "count_distinct":
		a.distinct[fmt.Sprint(v)] = true
	}
}

func (a *accumulator) value() any {
	switch a.metric {
	case "sum":
		if a.allInt {
			return int64(a.sum)
		}
		return a.sum
	case "min", "max":
		return a.best
	case "count_distinct":
		return len(a.distinct)
	}
	return a.count
}

func (s api) AggregateStream(ctx context.Context, req rsserver.AggregateStreamRequestObject) (rsserver.AggregateStreamResponseObject, error) {
	rc, stream, p := reqCtxFrom(ctx), req.Stream, req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	sc, err := s.resolveStream(rc, stream, connID)
	if err != nil {
		return nil, err
	}
	st := sc.stream
	metric := string(p.Metric)
	if !slices.Contains(metrics, metric) {
		return nil, errInvalid("metric", "metric must be one of count, sum, min, max, count_distinct")
	}
	checkField := func(param, name, role string) error {
		if name == "" {
			return nil
		}
		f, ok := st.Field(name)
		if !ok {
			return errInvalid(param, "Unknown field: %s", name)
		}
		if !rc.grant.grantsField(sc.conns, st.Name, name) {
			return errInvalid(param, "Field '%s' of stream '%s' is not granted", name, st.Name)
		}
		if !f.HasAggregation(role) {
			return errInvalid(param, "Field '%s' of stream '%s' is not declared for %s", name, st.Name, role)
		}
		return nil
	}
	field := val(p.Field)
	if metric == "count" && field != "" {
		return nil, errInvalid("field", "metric=count takes no field")
	} else if metric != "count" && field == "" {
		return nil, errInvalid("field", "metric=%s needs field", metric)
	}
	if err := checkField("field", field, metric); err != nil {
		return nil, err
	}
	groupBy, groupByTime, granularity := val(p.GroupBy), val(p.GroupByTime), string(val(p.Granularity))
	if groupBy != "" && groupByTime != "" {
		return nil, errInvalid("group_by", "group_by and group_by_time cannot be combined")
	}
	if err := cmp.Or(checkField("group_by", groupBy, "group_by"), checkField("group_by_time", groupByTime, "group_by_time")); err != nil {
		return nil, err
	}
	if groupByTime != "" {
		if granularity == "" {
			return nil, errInvalid("granularity", "group_by_time needs granularity")
		}
		if !slices.Contains(granularities, granularity) {
			return nil, errInvalid("granularity", "granularity must be one of %s", strings.Join(granularities, ", "))
		}
	} else if granularity != "" {
		return nil, errInvalid("granularity", "granularity needs group_by_time")
	}
	timeZone := any(nil)
	if groupByTime != "" {
		timeZone = "UTC"
	}
	if tz := val(p.TimeZone); tz != "" {
		if !strings.EqualFold(tz, "UTC") && tz != "Etc/UTC" {
			return nil, errInvalid("time_zone", "the demo resource server buckets in UTC only")
		}
		timeZone = "UTC"
	}
	grouped := groupBy != "" || groupByTime != ""
	limit, w, err := pageLimit(p.Limit, defaultGroupLimit, maxGroupLimit, "groups")
	if err != nil {
		return nil, err
	}
	if grouped {
		warnings = append(warnings, w...)
	}
	filters, err := parseFilters(rc, st, rc.grant, sc.conns)
	if err != nil {
		return nil, err
	}
	recs, err := s.store.Scan(ctx, sc.conns, st.Name, filters)
	if err != nil {
		return nil, err
	}
	body := obj(
		"approximate", false,
		"field", nullable(field),
		"filtered_record_count", len(recs),
		"granularity", nullable(granularity),
		"group_by", nullable(groupBy),
		"group_by_time", nullable(groupByTime),
		"metric", metric,
		"object", "aggregation",
		"stream", st.Name,
		"time_zone", timeZone,
	)
	if !grouped {
		acc := newAccumulator(metric)
		for _, r := range recs {
			acc.add(r.Data[field])
		}
		body = body.set("value", acc.value())
	} else {
		groups := map[string]*accumulator{} // bounded by the stream's records
		for _, r := range recs {
			key := "null"
			if groupByTime != "" {
				ts, _ := r.Data[groupByTime].(string)
				if key, err = bucketKey(ts, granularity); err != nil {
					return nil, err
				}
			} else if v := r.Data[groupBy]; v != nil {
				key = fmt.Sprint(v)
			}
			if groups[key] == nil {
				groups[key] = newAccumulator(metric)
			}
			groups[key].add(r.Data[field])
		}
		keys := slices.Collect(maps.Keys(groups))
		if groupByTime != "" {
			slices.Sort(keys)
		} else {
			slices.SortFunc(keys, func(a, b string) int {
				return cmp.Or(cmp.Compare(groups[b].count, groups[a].count), cmp.Compare(a, b))
			})
		}
		out := []object{}
		other := 0
		for i, k := range keys {
			if i >= limit {
				other += groups[k].count
				continue
			}
			g := obj("count", groups[k].count, "key", k)
			if metric != "count" {
				g = g.set("value", groups[k].value())
			}
			out = append(out, g)
		}
		body = append(body, member{"groups", out}, member{"limit", limit}, member{"other_count", other})
	}
	body = append(body, member{"links", obj("self", rc.selfLink())}, member{"meta", meta(warnings)})
	return jsonReply(200, body), nil
}
