package demors

import (
	"fmt"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

// streamScope is the resolved target of a stream-level request: the stream's manifest and
// the granted connections to read, in catalog order.
type streamScope struct {
	connector *store.Connector
	stream    *store.Stream
	conns     []string
}

// checkConnection validates a connection_id, if given, against the grant.
func (s *Server) checkConnection(rc *reqCtx, connectionID string) error {
	if _, granted := rc.grant.access[connectionID]; granted || connectionID == "" {
		return nil
	}
	if _, known := s.cat.Connection(connectionID); rc.grant.owner && !known {
		return errNotFound(fmt.Sprintf("Connection '%s' not found", connectionID))
	}
	return errAuth("context.instance_mismatch", authFailedMessage)
}

// resolveStream checks a stream (and optional connection) against the grant: as at the
// reference RS, 401 context.stream_not_allowed outside a client grant, and 404 for an
// owner's unknown stream.
func (s *Server) resolveStream(rc *reqCtx, name, connectionID string) (*streamScope, error) {
	var ctr *store.Connector
	var st *store.Stream
	for i := range s.cat.Connectors {
		if st0, ok := s.cat.Connectors[i].Stream(name); ok && st == nil {
			ctr, st = &s.cat.Connectors[i], st0
		}
	}
	conns := rc.grant.connectionsFor(s.cat, name) // none for an unknown stream
	if st == nil || len(conns) == 0 {
		if rc.grant.owner {
			return nil, errNotFound(fmt.Sprintf("Stream '%s' not found", name))
		}
		return nil, errStreamNotAllowed()
	}
	if connectionID != "" {
		if err := s.checkConnection(rc, connectionID); err != nil {
			return nil, err
		}
		if !rc.grant.allows(connectionID, name) {
			if rc.grant.owner {
				return nil, errNotFound(fmt.Sprintf("Stream '%s' not found under connection '%s'", name, connectionID))
			}
			return nil, errStreamNotAllowed()
		}
		conns = []string{connectionID}
	}
	return &streamScope{connector: ctr, stream: st, conns: conns}, nil
}

// connectionParam returns the connection_id of the request, accepting the deprecated
// connector_instance_id alias with a deprecated_alias_used warning.
func connectionParam(rc *reqCtx, typed *string) (string, []object) {
	if v := val(typed); v != "" {
		return v, nil
	}
	if v := rc.query.Get("connection_id"); v != "" {
		return v, nil
	}
	if v := rc.query.Get("connector_instance_id"); v != "" {
		return v, []object{obj(
			"code", "deprecated_alias_used",
			"message", "connector_instance_id is a deprecated alias; use connection_id.",
			"param", "connector_instance_id",
		)}
	}
	return "", nil
}

// connectionRefs are the {connection_id, display_name} pairs used in lists and errors.
func (s *Server) connectionRefs(ids []string) []object {
	out := make([]object, len(ids))
	for i, id := range ids {
		out[i] = s.withDisplayName(obj("connection_id", id), id)
	}
	return out
}

// withDisplayName adds the connection's display name to o, when it has one.
func (s *Server) withDisplayName(o object, connectionID string) object {
	if c, _ := s.cat.Connection(connectionID); c.DisplayName != "" {
		return o.set("display_name", c.DisplayName)
	}
	return o
}
