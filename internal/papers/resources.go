package papers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

// URIScheme prefixes every resource URI.
const URIScheme = "paper://"

// Resource kinds of a paper URI.
const (
	KindMetadata    = "metadata"
	KindSummary     = "summary"
	KindSource      = "source"
	KindTranslation = "translation"
)

// PaperURI is a parsed paper://{paper_id}/... resource URI.
type PaperURI struct {
	PaperID  string
	Kind     string // one of the Kind* constants
	Template string // summary/{template}; empty for the preferred one
	Lang     string // translation/{lang}, lower-cased
}

// ParseURI parses a paper resource URI by hand: the paper id sits where a
// URL host would be, so a URL parser would lower-case or reject it. Each
// segment is percent-decoded and must then be a plain name.
func ParseURI(uri string) (PaperURI, error) {
	rest, ok := strings.CutPrefix(uri, URIScheme)
	if !ok {
		return PaperURI{}, fmt.Errorf("resource URI %q does not start with %s", uri, URIScheme)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		return PaperURI{}, fmt.Errorf("resource URI %q must not carry a query or fragment", uri)
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return PaperURI{}, fmt.Errorf("resource URI %q: bad escape in %q", uri, s)
		}
		segs[i] = d
	}
	if len(segs) < 2 || !papertools.FormatPaperID.Valid(segs[0]) {
		return PaperURI{}, fmt.Errorf("resource URI %q needs a paper_id of 1-64 letters, digits, '-' or '_' after %s", uri, URIScheme)
	}
	u := PaperURI{PaperID: segs[0], Kind: segs[1]}
	switch {
	case len(segs) == 2 && (u.Kind == KindMetadata || u.Kind == KindSummary || u.Kind == KindSource):
	case len(segs) == 3 && u.Kind == KindSummary:
		if !papertools.FormatTemplate.Valid(segs[2]) {
			return PaperURI{}, fmt.Errorf("resource URI %q: %q is not a template name", uri, segs[2])
		}
		u.Template = segs[2]
	case len(segs) == 3 && u.Kind == KindTranslation:
		u.Lang = strings.ToLower(segs[2])
		if !papertools.FormatLanguage.Valid(u.Lang) {
			return PaperURI{}, fmt.Errorf("resource URI %q: %q is not a language code", uri, segs[2])
		}
	default:
		return PaperURI{}, fmt.Errorf("resource URI %q is not one of paper://{paper_id}/metadata, /summary, /summary/{template}, /source, /translation/{lang}", uri)
	}
	return u, nil
}

// String renders u back as a URI.
func (u PaperURI) String() string {
	s := URIScheme + u.PaperID + "/" + u.Kind
	switch {
	case u.Template != "":
		s += "/" + u.Template
	case u.Lang != "":
		s += "/" + u.Lang
	}
	return s
}

// resourceHint ends the truncation marker of a resource read.
func resourceHint(tool string) string {
	return fmt.Sprintf("Resource reads stop at %d characters; call %s with a larger max_chars for more.", DefaultMaxChars, tool)
}

// ReadPaperMetadataResource reads paper://{paper_id}/metadata.
func (h *Handlers) ReadPaperMetadataResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	_, p, err := h.resourcePaper(ctx, req, KindMetadata)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(metadataOf(p), "", "  ")
	if err != nil {
		return nil, err
	}
	return textContents(req, "application/json", string(b)), nil
}

// ReadPaperSummaryResource reads paper://{paper_id}/summary, the preferred
// template.
func (h *Handlers) ReadPaperSummaryResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	u, p, err := h.resourcePaper(ctx, req, KindSummary)
	if err != nil {
		return nil, err
	}
	_, body, terr := h.summary(ctx, p, u.Template)
	if terr != nil {
		return nil, resourceError(ctx, terr)
	}
	c := truncate(body, DefaultMaxChars, resourceHint("get_paper_summary"))
	return textContents(req, "application/json", c.Text), nil
}

// ReadPaperSummaryByTemplateResource reads
// paper://{paper_id}/summary/{template}.
func (h *Handlers) ReadPaperSummaryByTemplateResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return h.ReadPaperSummaryResource(ctx, req)
}

// ReadPaperSourceResource reads paper://{paper_id}/source.
func (h *Handlers) ReadPaperSourceResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	_, p, err := h.resourcePaper(ctx, req, KindSource)
	if err != nil {
		return nil, err
	}
	if p.SourceHash == "" {
		return nil, resourceError(ctx, &toolError{Code: CodeSourceNotAvailable, PaperID: p.ID,
			Message: fmt.Sprintf("paper %s has no source markdown in the snapshot; read paper://%s/summary instead", p.ID, p.ID)})
	}
	c, terr := h.source(ctx, p, DefaultMaxChars, resourceHint("get_paper_source"))
	if terr != nil {
		return nil, resourceError(ctx, terr)
	}
	return textContents(req, "text/markdown", c.Text), nil
}

// ReadPaperTranslationResource reads paper://{paper_id}/translation/{lang}.
func (h *Handlers) ReadPaperTranslationResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	u, p, err := h.resourcePaper(ctx, req, KindTranslation)
	if err != nil {
		return nil, err
	}
	t, ok := p.Translation(u.Lang)
	if !ok {
		avail := cmp.Or(strings.Join(p.Langs(), ", "), "none")
		return nil, resourceError(ctx, &toolError{Code: CodeTranslationNotAvailable, PaperID: p.ID, Lang: u.Lang,
			Message: fmt.Sprintf("paper %s has no %q translation; available: %s", p.ID, u.Lang, avail)})
	}
	c, err := h.readText(ctx, assets.TranslationPath(t.Lang, t.Hash), DefaultMaxChars, fmt.Sprintf("Resource reads stop at %d characters.", DefaultMaxChars))
	if err != nil {
		return nil, resourceError(ctx, h.assetFailed(err, t.Lang+" translation", p.ID))
	}
	return textContents(req, "text/markdown", c.Text), nil
}

// resourcePaper parses the request URI, checks its kind and loads the
// paper.
func (h *Handlers) resourcePaper(ctx context.Context, req mcp.ReadResourceRequest, kind string) (PaperURI, *store.Paper, error) {
	u, err := ParseURI(req.Params.URI)
	if err != nil {
		return u, nil, resourceError(ctx, &toolError{Code: CodeValidation, Message: err.Error(), Fields: map[string]any{"param": "uri"}})
	}
	if u.Kind != kind {
		return u, nil, resourceError(ctx, &toolError{Code: CodeValidation, Message: fmt.Sprintf("resource URI %q is not a %s URI", req.Params.URI, kind), Fields: map[string]any{"param": "uri"}})
	}
	p, err := h.store.Paper(ctx, u.PaperID)
	if errors.Is(err, store.ErrNotFound) {
		return u, nil, resourceError(ctx, &toolError{Code: CodeNotFound, PaperID: u.PaperID, Message: fmt.Sprintf("paper %s is not in the snapshot", u.PaperID)})
	}
	if err != nil {
		h.log.Error("resource read failed", "uri", req.Params.URI, "err", err)
		return u, nil, resourceError(ctx, &toolError{Code: CodeInternal, Message: "the snapshot could not be read"})
	}
	return u, p, nil
}

// resourceError is the error a resource read returns: the JSON-RPC error
// carries the tool error's structured object as data, with -32602 for a URI
// that names no resource, -32002 for a paper, summary, source or
// translation the snapshot does not have, and -32603 otherwise.
func resourceError(ctx context.Context, e *toolError) error {
	obj, _ := json.Marshal(e.structured())
	switch e.Code {
	case CodeValidation:
		return transport.InvalidResourceURI(obj)
	case CodeNotFound, CodeTemplateNotAvailable, CodeSourceNotAvailable, CodeTranslationNotAvailable:
		return transport.ResourceNotFound(ctx, obj)
	}
	return transport.ResourceFailed(obj)
}

// textContents is a resource's one text, with each run of characters a
// person cannot see shown as a marker (package unseen); a JSON text stays
// valid JSON.
func textContents(req mcp.ReadResourceRequest, mime, text string) []mcp.ResourceContents {
	text = unseen.Show(text)
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mime, Text: text}}
}
