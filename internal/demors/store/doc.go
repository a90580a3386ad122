// Package store is the data layer of the embedded demo resource server: a deterministic,
// seeded SQLite database (records, FTS5 lexical index, blobs) and the demo connector
// manifests that describe them. It knows nothing about HTTP or grants; callers pass the
// connections, streams and fields they are allowed to touch.
//
// The seed (fixed PRNG, no network; built once per process, copied into every Open):
//
//   - connector loom (source https://registry.pdpp.dev/connectors/loom), connections
//     cin_demo_loom_main "Loom (work)" and cin_demo_loom_peer "Loom (personal)".
//     main: videos vid-0..vid-39 and transcripts tr-0..tr-39, created 2026-01-01 + N days;
//     peer: vid-0..vid-7 and tr-0..tr-7 (the same ids, other content), at 12:00 on the same
//     days. videos: title (short, role primary-title), description (~1,500 chars, role
//     secondary), duration_seconds (integer), created_at (role event-time), metadata (JSON
//     object {resolution, codec, tags[]}). transcripts: video_id, language (en/it),
//     text (20,000–25,000 code points, role secondary) holding "needle<N> zephyrmarker" once,
//     near the middle, created_at. transcripts declare relationship video (has_one,
//     transcripts.video_id = videos.id); videos declare none.
//   - connector notes (source https://registry.pdpp.dev/connectors/notes), connection
//     cin_demo_notes "Notes": notes note-0..note-11 with title, body (a few hundred chars),
//     folder (work/personal/ideas), created_at and attachment, a blob reference
//     {blob_id, media_type, size_bytes, filename, sha256} (x_pdpp_type blob, role media;
//     null on note-8 and note-9; note-5's PNG is about 300 KB, the others a few KB).
//   - search terms: "zephyrmarker" is in every transcript text, in the titles only of
//     note-2 and note-6, and in the body of note-4; "needle<N>" finds tr-N (both
//     connections for N < 8); "quokka" is only in note-3's title; "lighthouse" only in
//     note-4's body; "aurora" only in main vid-3's description; "weekly sync" is in many
//     video titles (semantic search).
package store
