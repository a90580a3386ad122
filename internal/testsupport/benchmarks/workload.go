package benchmarks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// ClientToken is the fixed bearer token of the demo RS "client" grant used by
// every measurement, so runs are repeatable.
const ClientToken = "pdpp-bench-client-token-0000000000000001"

// FetchID is the record read by the fetch and read_record_field calls: a demo
// transcript of about 21,000 characters.
const FetchID = "cin_demo_loom_main/transcripts:tr-5"

// Call is one measured tool call and the RS request the adapter makes for
// it. Direct makes that request (same path, query and headers) with the
// generated typed RS client and returns the decoded model
// (*rsclient.SearchResultList, *rsclient.Record or *rsclient.FieldWindow)
// and the body, as a client of the RS would.
type Call struct {
	Name   string
	Tool   string
	Args   map[string]any
	Direct func(ctx context.Context, c *rsclient.ClientWithResponses) (model any, body []byte, err error)
}

// QueryLimit is the page size of the query_records call: ten transcripts of
// about 21,000 characters each, a page whose compact reply must cut values.
const QueryLimit = 10

// Workload returns the measured calls: search for the demo marker word,
// a page of long transcripts, fetch of one of them, and read_record_field of
// that transcript's text with the default window and centred on a match.
func Workload() []Call {
	const (
		connection = "cin_demo_loom_main"
		stream     = "transcripts"
		record     = "tr-5"
		field      = "text"
		marker     = "zephyrmarker"
	)
	return []Call{
		{
			Name: "search",
			Tool: "search",
			Args: map[string]any{"q": marker, "limit": 10},
			Direct: func(ctx context.Context, c *rsclient.ClientWithResponses) (any, []byte, error) {
				r, err := c.SearchRecordsLexicalWithResponse(ctx, &rsclient.SearchRecordsLexicalParams{Q: marker, Limit: new(10)})
				if err != nil {
					return nil, nil, err
				}
				return ok(r.JSON200, r.StatusCode(), r.Body)
			},
		},
		{
			Name: "query",
			Tool: "query_records",
			Args: map[string]any{"stream": stream, "connection_id": connection, "limit": QueryLimit},
			Direct: func(ctx context.Context, c *rsclient.ClientWithResponses) (any, []byte, error) {
				r, err := c.ListRecordsWithResponse(ctx, stream, &rsclient.ListRecordsParams{Limit: new(QueryLimit), ConnectionId: new(connection)})
				if err != nil {
					return nil, nil, err
				}
				return ok(r.JSON200, r.StatusCode(), r.Body)
			},
		},
		{
			Name: "fetch",
			Tool: "fetch",
			Args: map[string]any{"id": FetchID},
			Direct: func(ctx context.Context, c *rsclient.ClientWithResponses) (any, []byte, error) {
				r, err := c.GetRecordWithResponse(ctx, stream, record, &rsclient.GetRecordParams{ConnectionId: new(connection)})
				if err != nil {
					return nil, nil, err
				}
				return ok(r.JSON200, r.StatusCode(), r.Body)
			},
		},
		{
			Name: "read_field",
			Tool: "read_record_field",
			Args: map[string]any{"id": FetchID, "field_path": field},
			Direct: func(ctx context.Context, c *rsclient.ClientWithResponses) (any, []byte, error) {
				r, err := c.GetFieldWindowWithResponse(ctx, stream, record, &rsclient.GetFieldWindowParams{Field: field, ConnectionId: new(connection)})
				if err != nil {
					return nil, nil, err
				}
				return ok(r.JSON200, r.StatusCode(), r.Body)
			},
		},
		{
			Name: "read_field_q",
			Tool: "read_record_field",
			Args: map[string]any{"id": FetchID, "field_path": field, "q": marker},
			Direct: func(ctx context.Context, c *rsclient.ClientWithResponses) (any, []byte, error) {
				// The adapter's default context around a match: 400 before, 1200 after.
				r, err := c.GetFieldWindowWithResponse(ctx, stream, record, &rsclient.GetFieldWindowParams{
					Field: field, ConnectionId: new(connection), Q: new(marker), BeforeChars: new(400), AfterChars: new(1200)})
				if err != nil {
					return nil, nil, err
				}
				return ok(r.JSON200, r.StatusCode(), r.Body)
			},
		},
	}
}

// ok returns the decoded 200 model and the body, or an error naming the
// status and the start of the body.
func ok[T any](model *T, status int, body []byte) (any, []byte, error) {
	if status != http.StatusOK || model == nil {
		return nil, nil, fmt.Errorf("RS answered %d: %.300s", status, body)
	}
	return model, body, nil
}

// NewHTTPClient returns an HTTP client with the same connection settings as
// the adapter's RS client (keep-alive, up to 64 idle connections per host),
// so direct and adapter calls reuse connections alike.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// NewDirectClient returns the generated typed RS client for baseURL that
// sends token and Accept: application/json on every request, as the adapter
// does.
func NewDirectClient(baseURL, token string, hc *http.Client) (*rsclient.ClientWithResponses, error) {
	return rsclient.NewClientWithResponses(baseURL,
		rsclient.WithHTTPClient(hc),
		rsclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "application/json")
			return nil
		}))
}
