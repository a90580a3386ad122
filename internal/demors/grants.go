package demors

import (
	"slices"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

// Grant names accepted by Config.Tokens and Server.Token.
const (
	GrantClient = "client"
	GrantNarrow = "narrow"
	GrantOwner  = "owner"
)

// grantNames lists the grants in a fixed order.
var grantNames = []string{GrantClient, GrantNarrow, GrantOwner}

// grant is what one bearer token may read. For client grants, access maps connection ->
// stream -> granted fields (nil means every declared field). Owner tokens read everything.
type grant struct {
	name     string
	owner    bool
	grantID  string
	clientID string
	access   map[string]map[string][]string
}

// demoGrants builds the three demo grants over the catalog.
func demoGrants(cat *store.Catalog) map[string]*grant {
	all := map[string]map[string][]string{}
	for _, conn := range cat.Connections {
		ctr, _ := cat.Connector(conn.ConnectorID)
		all[conn.ID] = map[string][]string{}
		for _, st := range ctr.Streams {
			all[conn.ID][st.Name] = nil
		}
	}
	return map[string]*grant{
		GrantClient: {name: GrantClient, grantID: "grt_demo_client", clientID: "cli_demo_client", access: all},
		GrantNarrow: {name: GrantNarrow, grantID: "grt_demo_narrow", clientID: "cli_demo_narrow", access: map[string]map[string][]string{
			store.ConnLoomMain: {store.StreamTranscripts: {"id", "language", "text", "created_at"}},
		}},
		GrantOwner: {name: GrantOwner, owner: true, access: all},
	}
}

// tokenKind is the bearer.token_kind the schema reports.
func (g *grant) tokenKind() string {
	if g.owner {
		return "owner"
	}
	return "client"
}

// allows reports whether the grant covers the stream under the connection.
func (g *grant) allows(connectionID, stream string) bool {
	streams, ok := g.access[connectionID]
	if !ok {
		return false
	}
	_, ok = streams[stream]
	return ok
}

// hasConnection reports whether the grant names the connection at all.
func (g *grant) hasConnection(connectionID string) bool {
	_, ok := g.access[connectionID]
	return ok
}

// fieldGranted reports whether a declared field of a granted stream may be read.
func (g *grant) fieldGranted(connectionID, stream, field string) bool {
	streams, ok := g.access[connectionID]
	if !ok {
		return false
	}
	fields, ok := streams[stream]
	if !ok {
		return false
	}
	return fields == nil || slices.Contains(fields, field)
}

// connectionsFor returns, in catalog order, the connections under which the grant covers the
// stream.
func (g *grant) connectionsFor(cat *store.Catalog, stream string) []string {
	var out []string
	for _, conn := range cat.Connections {
		if g.allows(conn.ID, stream) {
			out = append(out, conn.ID)
		}
	}
	return out
}

// grantedFields returns the stream's readable fields under a connection, in manifest order.
func (g *grant) grantedFields(st *store.Stream, connectionID string) []string {
	var out []string
	for _, f := range st.Fields {
		if g.fieldGranted(connectionID, st.Name, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}
