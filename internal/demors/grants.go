package demors

import (
	"slices"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
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

// fullAccess grants every stream of every connection of the connectors connector accepts.
func fullAccess(cat *store.Catalog, connector func(id string) bool) map[string]map[string][]string {
	access := map[string]map[string][]string{}
	for _, conn := range cat.Connections {
		if !connector(conn.ConnectorID) {
			continue
		}
		ctr, _ := cat.Connector(conn.ConnectorID)
		access[conn.ID] = map[string][]string{}
		for _, st := range ctr.Streams {
			access[conn.ID][st.Name] = nil
		}
	}
	return access
}

// demoGrants builds the three demo grants over the catalog.
func demoGrants(cat *store.Catalog) map[string]*grant {
	all := fullAccess(cat, func(string) bool { return true })
	return map[string]*grant{
		GrantClient: {name: GrantClient, grantID: "grt_demo_client", clientID: "cli_demo_client", access: all},
		GrantNarrow: {name: GrantNarrow, grantID: "grt_demo_narrow", clientID: "cli_demo_narrow", access: map[string]map[string][]string{
			store.ConnLoomMain: {store.StreamTranscripts: {"id", "language", "text", "created_at"}},
		}},
		GrantOwner: {name: GrantOwner, owner: true, access: all},
	}
}

// allows reports whether the grant covers the stream under the connection.
func (g *grant) allows(connectionID, stream string) bool {
	_, ok := g.access[connectionID][stream]
	return ok
}

// fieldGranted reports whether a declared field of a granted stream may be read.
func (g *grant) fieldGranted(connectionID, stream, field string) bool {
	fields, ok := g.access[connectionID][stream]
	return ok && (fields == nil || slices.Contains(fields, field))
}

// grantsField reports whether the grant lets every one of conns read the field.
func (g *grant) grantsField(conns []string, stream, field string) bool {
	return !slices.ContainsFunc(conns, func(c string) bool { return !g.fieldGranted(c, stream, field) })
}

// connectionsFor returns, in catalog order, the connections whose stream the grant covers.
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

// GrantOAuth names, in logs, a grant the demo authorization server issued.
const GrantOAuth = "oauth"

// issuedGrant answers a token the demo authorization server may have issued, as the
// reference RS does: an unknown token is inactive (401); a package token gets 404 "Unknown
// source: unknown" on every /v1 route (it works only at the provider's own hosted MCP
// endpoint); an expired or revoked grant is 403 grant_expired or grant_revoked; a live
// client grant reads every stream of every connection of its one source.
func (s *Server) issuedGrant(token string) (*grant, *apiError) {
	g, state, ok := s.as.Lookup(token)
	switch {
	case !ok:
		return nil, errInactiveToken()
	case state == demoas.Revoked:
		return nil, errForbidden("grant_revoked", "The grant has been revoked")
	case state == demoas.Expired:
		return nil, errForbidden("grant_expired", "The grant has expired")
	case g.Kind == demoas.KindPackage:
		return nil, errNotFound("Unknown source: unknown")
	}
	access := fullAccess(s.cat, func(id string) bool { return slices.Contains(g.Sources, id) })
	return &grant{name: GrantOAuth, grantID: g.ID, clientID: g.ClientID, access: access}, nil
}
