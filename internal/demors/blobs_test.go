package demors_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

func TestBlobs(t *testing.T) {
	r := newRS(t)
	notes := list(r.get(t, "/v1/streams/notes/records?limit=100&fields=id,attachment", demors.GrantClient).mustStatus(t, 200).body["data"])
	if len(notes) != 12 {
		t.Fatalf("%d notes", len(notes))
	}
	magic := map[string][]byte{"image/png": []byte("\x89PNG\r\n\x1a\n"), "application/pdf": []byte("%PDF-")}
	var large, withBlob, without int
	for _, n := range notes {
		att := at(n, "data", "attachment")
		if att == nil {
			without++
			continue
		}
		withBlob++
		id := str(at(att, "blob_id"))
		t.Run(str(at(n, "id"))+"/"+str(at(att, "filename")), func(t *testing.T) {
			resp := r.get(t, "/v1/blobs/"+id, demors.GrantClient).mustStatus(t, 200)
			media := str(at(att, "media_type"))
			if resp.header.Get("Content-Type") != media {
				t.Errorf("Content-Type = %q, want %q", resp.header.Get("Content-Type"), media)
			}
			size := int(num(at(att, "size_bytes")))
			if resp.header.Get("Content-Length") != strconv.Itoa(size) || len(resp.raw) != size {
				t.Errorf("Content-Length %q, body %d bytes, size_bytes %d", resp.header.Get("Content-Length"), len(resp.raw), size)
			}
			sum := sha256.Sum256(resp.raw)
			if hex.EncodeToString(sum[:]) != str(at(att, "sha256")) {
				t.Error("sha256 of the bytes differs from the reference")
			}
			if !bytes.HasPrefix(resp.raw, magic[media]) {
				t.Errorf("bytes do not start like %s", media)
			}
			if size > 250_000 {
				large++
			} else if size > 10_000 || size < 1_000 {
				t.Errorf("small attachment is %d bytes, want a few KB", size)
			}
			r.get(t, "/v1/blobs/"+id, demors.GrantNarrow).mustStatus(t, 404)
		})
	}
	if large != 1 || withBlob < 8 || without == 0 {
		t.Errorf("attachments: %d large, %d with blob, %d without", large, withBlob, without)
	}
	cases := []struct{ name, path, grant, code string }{
		{"unknown blob", "/v1/blobs/blob_000000000000000000000000", demors.GrantClient, "not_found"},
		{"blob under another connection", "/v1/blobs/" + str(at(notes, 0, "data", "attachment", "blob_id")) + "?connection_id=cin_demo_loom_main", demors.GrantClient, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code := r.get(t, tc.path, tc.grant).mustStatus(t, 404).errCode(); code != tc.code {
				t.Errorf("code = %q", code)
			}
		})
	}
}
