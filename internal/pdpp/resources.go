package pdpp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
)

// resourceError carries the error envelope (RS or adapter) as the JSON-RPC
// error message of a failed resources/read.
type resourceError struct{ env json.RawMessage }

func (e resourceError) Error() string { return string(e.env) }

func resourceFailure(err error) error { return resourceError{env: asRSError(err).Envelope} }

func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, resourceFailure(err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// ReadStreamResource reads pdpp://stream/{name}: the stream's RS metadata.
func (a *Adapter) ReadStreamResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	name, err := handles.ParseStreamURI(uri)
	if err != nil {
		return nil, resourceFailure(err)
	}
	r, berr := rsclient.NewGetStreamMetadataRequest(a.rs.BaseURL(), name, nil)
	resp, err := a.do(ctx, r, berr)
	if err != nil {
		return nil, resourceFailure(err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(resp.Body)}}, nil
}

// ReadRecordResource reads pdpp://record/{+handle}: the same document fetch returns.
func (a *Adapter) ReadRecordResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	ref, err := handles.ParseRecordURI(uri)
	if err != nil {
		return nil, resourceFailure(err)
	}
	doc, err := a.fetchDocument(ctx, ref, nil, nil, nil)
	if err != nil {
		return nil, resourceFailure(err)
	}
	return jsonContents(uri, doc)
}

// ReadFieldWindowResource reads pdpp://field-window/{handle}: the same window,
// in the same structured form, as the read_record_field call it encodes.
func (a *Adapter) ReadFieldWindowResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	w, err := handles.ParseFieldWindowURI(uri)
	if err != nil {
		return nil, resourceFailure(err)
	}
	view, err := a.readWindow(ctx, w)
	if err != nil {
		return nil, resourceFailure(err)
	}
	return jsonContents(uri, view)
}

// ReadBlobResource reads pdpp://blob/{blob_id}: the blob bytes through the
// grant-scoped blob route, as an explicit, host-initiated escalation.
func (a *Adapter) ReadBlobResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	id := strings.TrimPrefix(uri, "pdpp://blob/")
	if id == uri || id == "" || !handles.ValidName(id) {
		return nil, resourceFailure(rs.AdapterError("invalid_id", fmt.Sprintf("%q is not a blob URI; use pdpp://blob/{blob_id} as shown in a record", uri), "uri"))
	}
	r, berr := rsclient.NewGetBlobRequest(a.rs.BaseURL(), id, nil)
	if r != nil {
		r.Header.Set("Accept", "*/*")
	}
	resp, err := a.do(ctx, r, berr)
	if err != nil {
		return nil, resourceFailure(err)
	}
	media := resp.Header.Get("Content-Type")
	if media == "" {
		media = "application/octet-stream"
	}
	return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: media, Blob: base64.StdEncoding.EncodeToString(resp.Body)}}, nil
}
