// Package handles names records, streams and field windows for models and
// MCP hosts, and validates every such name before it can reach the RS.
//
// A record is named by a result id, "{connection_id}/{stream}:{record_id}"
// (or the legacy "{stream}:{record_id}"), and by a resource URI,
// "pdpp://record/{escaped id}". A bounded field window is named by an
// opaque, versioned cursor ("fw1." + base64url JSON) and by the resource
// URI "pdpp://field-window/{cursor}". Streams are "pdpp://stream/{name}".
// A compact list reply resumes after its last item shown with a page
// cursor ("pc1~" + base64url JSON + "~" + the RS cursor it wraps).
// Every base64url payload (cursors, the reference adapter's field-window
// handle, encoded record references) goes through one decoder that bounds
// its size and alphabet before decoding.
//
// An id holding a character a person cannot see is written in a URI
// spelled (unseen.Spell, "n⟦U+200B⟧1") before it is percent-encoded, and
// each segment of a record URI is unspelled after it is percent-decoded;
// a tool argument reaches ParseID already unspelled (mcpkit.DecodeArgs).
//
// Parsing is strict: empty or extra segments, path traversal (also after
// percent-decoding), control characters and over-long values are rejected
// with a typed *mcpkit.ArgError (the argument error of every tool argument
// check) whose Field names the argument and whose message lists the
// accepted forms, so it can be handed to the model unchanged (Tool is left
// empty; the adapter knows it).
package handles
