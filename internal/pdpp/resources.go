package pdpp

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// resourceFailure is the error of a failed resources/read: the typed error
// object (RS or adapter) travels as the JSON-RPC error's data, with -32002
// when the RS says the resource does not exist (HTTP 404) or is outside the
// grant (a scope refusal, rs.ClassScope), -32602 when the adapter refused
// part of the URI, and -32603 otherwise.
//
// The object is held to resourceErrorBytes like a tool's error result (see
// evidence.FitError), whatever the RS put in its envelope.
func resourceFailure(ctx context.Context, err error) error {
	e := asRSError(err)
	obj, _ := showStructured(e.Object()) // the envelope may quote RS data
	obj = evidence.FitError(obj, resourceErrorBytes)
	switch {
	case e.Status == http.StatusNotFound || e.Code() == "not_found", rs.ClassOf(e) == rs.ClassScope:
		return transport.ResourceNotFound(ctx, obj)
	case e.Status == 0 && strings.HasPrefix(e.Code(), "invalid_"):
		// The adapter refused a part of the URI before any RS request.
		return transport.InvalidResourceURI(obj)
	}
	return transport.ResourceFailed(obj)
}

// resourceErrorBytes bounds the typed error object of a failed resources/read.
const resourceErrorBytes = 4096

// badURI is the error of a resource URI that names no resource: -32602 with
// the typed error object as data.
func badURI(err error) error {
	obj, _ := showStructured(asRSError(err).Object())
	return transport.InvalidResourceURI(evidence.FitError(obj, resourceErrorBytes))
}

func jsonContents(ctx context.Context, uri string, v any) ([]mcp.ResourceContents, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, resourceFailure(ctx, err)
	}
	// The document a tool shows, shown alike: hidden characters of values
	// as markers, of ids and calls spelled (an RS body passed on as it is
	// keeps them all as \u escapes, see ReadStreamResource).
	b, _ = unseen.ShowJSON(b, identityKey)
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// ReadStreamResource reads pdpp://stream/{name}: the stream's RS metadata.
func (a *Adapter) ReadStreamResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	name, err := handles.ParseStreamURI(uri)
	if err != nil {
		return nil, badURI(err)
	}
	r, berr := rsclient.NewGetStreamMetadataRequest(a.rs.BaseURL(), name, nil)
	resp, err := a.do(ctx, r, berr)
	if err != nil {
		return nil, resourceFailure(ctx, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(unseen.EscapeJSON(resp.Body))}}, nil
}

// ReadRecordResource reads pdpp://record/{+handle}: the same document fetch returns.
func (a *Adapter) ReadRecordResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	ref, err := handles.ParseRecordURI(uri)
	if err != nil {
		return nil, badURI(err)
	}
	doc, _, err := a.fetchRecord(ctx, mcptools.GetRecordCall{}, ref, nil, nil, nil, false, nil)
	if err != nil {
		return nil, resourceFailure(ctx, err)
	}
	return jsonContents(ctx, uri, doc)
}

// ReadFieldWindowResource reads pdpp://field-window/{handle}: the same window,
// in the same structured form, as the read_record_field call it encodes.
func (a *Adapter) ReadFieldWindowResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	w, err := handles.ParseFieldWindowURI(uri)
	if err != nil {
		return nil, badURI(err)
	}
	view, err := a.readWindow(ctx, mcptools.GetFieldWindowCall{}, w, true)
	if err != nil {
		return nil, resourceFailure(ctx, err)
	}
	return jsonContents(ctx, uri, view)
}

// ReadBlobResource reads pdpp://blob/{blob_id}: the blob bytes through the
// grant-scoped blob route, as an explicit, host-initiated escalation.
func (a *Adapter) ReadBlobResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	id := strings.TrimPrefix(uri, "pdpp://blob/")
	if id == uri || id == "" || !handles.ValidName(id) {
		return nil, badURI(rs.AdapterError("invalid_id", fmt.Sprintf("%q is not a blob URI; use pdpp://blob/{blob_id} as shown in a record", uri), "uri"))
	}
	r, berr := rsclient.NewGetBlobRequest(a.rs.BaseURL(), id, nil)
	if r != nil {
		r.Header.Set("Accept", "*/*")
	}
	resp, err := a.do(ctx, r, berr)
	if err != nil {
		return nil, resourceFailure(ctx, err)
	}
	media := cmp.Or(resp.Header.Get("Content-Type"), "application/octet-stream")
	return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: media, Blob: base64.StdEncoding.EncodeToString(resp.Body)}}, nil
}
