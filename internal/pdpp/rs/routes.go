package rs

import (
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/pdpp-mcp/pdpp-mcp/spec"
)

// RouteOther is the route template of a request that matches no known route.
const RouteOther = "other"

// extraRoutes are RS paths the adapter calls outside the OpenAPI document.
var extraRoutes = []string{"/" + ".well-known/oauth-protected-resource"}

// routeTemplate is one RS path template, as reported and split into
// segments for matching.
type routeTemplate struct {
	path string
	segs []string
}

// routeTemplates are the path templates of spec.OpenAPI (the document
// gen/rsclient is generated from) plus extraRoutes. The set is fixed at build
// time, which bounds the route label of RS metrics.
var routeTemplates = sync.OnceValue(func() []routeTemplate {
	var doc struct {
		Paths map[string]yaml.Node `yaml:"paths"`
	}
	_ = yaml.Unmarshal(spec.OpenAPI, &doc)
	var out []routeTemplate
	add := func(p string) {
		p = strings.Trim(p, "/")
		out = append(out, routeTemplate{path: "/" + p, segs: strings.Split(p, "/")})
	}
	for p := range doc.Paths {
		add(p)
	}
	for _, p := range extraRoutes {
		add(p)
	}
	return out
})

// Route maps an escaped request path below the provider URL's path to its route
// template (e.g. /v1/streams/{stream}/records/{id}), never echoing a path
// parameter; a path that matches no template is RouteOther. When several
// templates match, the one with the most literal segments wins.
func (c *Client) Route(path string) string {
	rel, ok := strings.CutPrefix(path, c.base.EscapedPath())
	if !ok {
		return RouteOther
	}
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	best, bestLiterals := RouteOther, -1
	for _, tmpl := range routeTemplates() {
		if len(tmpl.segs) != len(segs) {
			continue
		}
		literals, match := 0, true
		for i, t := range tmpl.segs {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				if segs[i] == "" {
					match = false
					break
				}
				continue
			}
			if t != segs[i] {
				match = false
				break
			}
			literals++
		}
		if match && literals > bestLiterals {
			best, bestLiterals = tmpl.path, literals
		}
	}
	return best
}
