package demors

import (
	"context"
	"mime"
	"net/http"
	"slices"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
)

// getBlob serves blob bytes only when a record the grant can read references the blob
// through a granted field; anything else is indistinguishable from a missing blob.
func (s api) GetBlob(ctx context.Context, req rsserver.GetBlobRequestObject) (rsserver.GetBlobResponseObject, error) {
	rc, blobID, p := reqCtxFrom(ctx), req.BlobId, req.Params
	connID, _ := connectionParam(rc, p.ConnectionId)
	if err := s.checkConnection(rc, connID); err != nil {
		return nil, err
	}
	blob, refs, _, err := s.store.Blob(ctx, blobID) // no refs when there is no blob
	if err != nil {
		return nil, err
	}
	var holders []string // bounded by the catalog's connections
	for _, ref := range refs {
		if (connID == "" || ref.ConnectionID == connID) && rc.grant.fieldGranted(ref.ConnectionID, ref.Stream, ref.Field) &&
			!slices.Contains(holders, ref.ConnectionID) {
			holders = append(holders, ref.ConnectionID)
		}
	}
	if len(holders) == 0 {
		return nil, errNotFound("Blob not found")
	}
	if len(holders) > 1 {
		return nil, errAmbiguous("Blob '"+blobID+"' is referenced under more than one connection. Retry with `connection_id`.", s.connectionRefs(holders))
	}
	h := http.Header{}
	h.Set("Content-Type", blob.MediaType)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": blob.Filename}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	h.Set("ETag", `"`+blob.SHA256+`"`)
	return &reply{status: http.StatusOK, header: h, body: blob.Bytes}, nil
}
