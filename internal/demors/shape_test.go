package demors_test

import (
	"encoding/json"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// samplesDir is where the captured reference-RS responses live (testdata/ at the module root).
var samplesDir = testkit.SamplesDir()

// shapeCase pairs a captured sample with the equivalent demo request.
type shapeCase struct {
	Sample string   `json:"sample"`
	Grant  string   `json:"grant"`
	Path   string   `json:"path"`
	Status int      `json:"status"`
	Ignore []string `json:"ignore"`
}

// shapeOf maps every JSON path (arrays as "[]", their elements merged) to the set of JSON
// types seen there, and the enumerated string fields to their values.
func shapeOf(v any, path string, types map[string]map[string]bool, values map[string]map[string]bool) {
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	switch x := v.(type) {
	case map[string]any:
		add(types, path, "object")
		for k, e := range x {
			shapeOf(e, path+"."+k, types, values)
		}
	case []any:
		add(types, path, "array")
		for _, e := range x {
			shapeOf(e, path+"[]", types, values)
		}
	case string:
		add(types, path, "string")
		last := path[strings.LastIndexAny(path, ".]")+1:]
		if enumeratedKeys[last] {
			add(values, path, x)
		}
	case float64:
		add(types, path, "number")
	case bool:
		add(types, path, "boolean")
	case nil:
		add(types, path, "null")
	}
}

// enumeratedKeys are string fields whose values (not only types) must match the samples.
var enumeratedKeys = map[string]bool{
	"object": true, "code": true, "type": true, "kind": true, "order": true,
	"provenance": true, "retrieval_mode": true, "method": true, "retry_with": true,
}

func TestResponseShapesMatchSamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "shape_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []shapeCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	r := newRS(t)
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.Sample, ".json"), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(samplesDir, tc.Sample))
			if err != nil {
				t.Fatal(err)
			}
			var sample any
			if err := json.Unmarshal(b, &sample); err != nil {
				t.Fatal(err)
			}
			resp := r.get(t, tc.Path, tc.Grant).mustStatus(t, tc.Status)
			var ours any
			if err := json.Unmarshal(resp.raw, &ours); err != nil {
				t.Fatal(err)
			}
			wantTypes, wantValues := map[string]map[string]bool{}, map[string]map[string]bool{}
			gotTypes, gotValues := map[string]map[string]bool{}, map[string]map[string]bool{}
			shapeOf(sample, "", wantTypes, wantValues)
			shapeOf(ours, "", gotTypes, gotValues)
			var problems []string
			for path, types := range wantTypes {
				if ignored(path, tc.Ignore) {
					continue
				}
				got, ok := gotTypes[path]
				if !ok {
					problems = append(problems, "missing "+path)
					continue
				}
				if !overlaps(types, got) {
					problems = append(problems, path+": sample "+keys(types)+", demo "+keys(got))
				}
			}
			for path, vals := range wantValues {
				if ignored(path, tc.Ignore) {
					continue
				}
				for v := range vals {
					if !gotValues[path][v] {
						problems = append(problems, path+": sample value "+v+" not in demo "+keys(gotValues[path]))
					}
				}
			}
			sort.Strings(problems)
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

func ignored(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, "."+p) {
			return true
		}
	}
	return false
}

// overlaps reports whether the demo can produce a sample type; a sample null only says
// the field exists.
func overlaps(want, got map[string]bool) bool {
	if len(want) == 1 && want["null"] {
		return true
	}
	for k := range want {
		if k != "null" && got[k] {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return "[" + strings.Join(out, ",") + "]"
}
