package store

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"
)

// Seed sizes (the loom connections' are in generate) and fixed generator inputs.
// Changing any of them changes the demo data.
const (
	NoteCount = 12
	seedKey   = 0x5eed_d3e0_0000_0001
)

// TimeLayout is the timestamp format of every stored time value.
const TimeLayout = "2006-01-02T15:04:05.000Z"

var baseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seedRecord is one generated record before it is stored.
type seedRecord struct {
	conn, stream, id string
	emittedAt        string
	fields           map[string]any
}

var natoWords = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " +
	"november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")

var workWords = strings.Fields("roadmap budget release customer design review launch metrics hiring " +
	"onboarding latency backlog pricing contract sprint feedback")

var italianWords = strings.Fields("allora progetto riunione settimana cliente perché città così più già " +
	"lavoro domani quindi bene proposta verifica")

// rng returns a generator seeded from the fixed key and the entity's identity, so one
// entity's data does not depend on how many others were generated before it.
func rng(parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seedKey, h.Sum64()))
}

func pick(r *rand.Rand, words []string) string { return words[r.IntN(len(words))] }

// writeSentence appends one generated sentence of 1–12 words with a trailing period and
// returns its length in code points.
func writeSentence(b *strings.Builder, r *rand.Rand, vocab []string) int {
	n := 1 + r.IntN(12)
	chars := 0
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
			chars++
		}
		w := vocab[r.IntN(len(vocab))]
		b.WriteString(w)
		chars += utf8.RuneCountInString(w)
	}
	b.WriteByte('.')
	return chars + 1
}

// prose appends generated sentences to b until it holds at least target characters
// (Unicode code points).
func prose(b *strings.Builder, r *rand.Rand, vocab []string, target int) {
	n := utf8.RuneCountInString(b.String())
	for n < target {
		if b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		n += writeSentence(b, r, vocab)
	}
}

func stamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// transcriptText builds a 20,000–25,000 character text with "needle<n> zephyrmarker"
// near its middle.
func transcriptText(r *rand.Rand, header string, n int, vocab []string) string {
	target := 20200 + r.IntN(4600)
	var b strings.Builder
	b.Grow(target + 64)
	b.WriteString(header)
	prose(&b, r, vocab, target/2)
	fmt.Fprintf(&b, " %s %s needle%d zephyrmarker %s %s.", pick(r, vocab), pick(r, vocab), n, pick(r, vocab), pick(r, vocab))
	prose(&b, r, vocab, target)
	return b.String()
}

func videoTitle(r *rand.Rand, n int, personal bool) string {
	topic := pick(r, natoWords)
	if personal {
		return fmt.Sprintf([]string{"Family update %d about %s", "Weekly sync %d with friends about %s"}[n%2], n, topic)
	}
	return fmt.Sprintf([]string{"Weekly sync %d about %s", "Design review %d: %s", "Customer call %d with %s", "Planning session %d on %s"}[n%4], n, topic)
}

func videoRecord(conn string, n int, created time.Time, personal bool) seedRecord {
	id := fmt.Sprintf("vid-%d", n)
	r := rng(conn, StreamVideos, id)
	title := videoTitle(r, n, personal)
	var b strings.Builder
	fmt.Fprintf(&b, "Recording %d: %s.", n, title)
	if conn == ConnLoomMain && n == 3 {
		b.WriteString(" The aurora dashboard demo starts after the intro.")
	}
	vocab := append(append([]string{}, natoWords...), workWords...)
	prose(&b, r, vocab, 1400+r.IntN(200))
	tags := []string{"standup", "design", "customer", "planning", "demo", "retro"}
	r.Shuffle(len(tags), func(i, j int) { tags[i], tags[j] = tags[j], tags[i] })
	meta := map[string]any{
		"resolution": pick(r, []string{"1920x1080", "1280x720", "3840x2160"}),
		"codec":      pick(r, []string{"h264", "vp9", "av1"}),
		"tags":       tags[:1+r.IntN(3)],
	}
	ts := stamp(created)
	return seedRecord{conn: conn, stream: StreamVideos, id: id, emittedAt: ts, fields: map[string]any{
		"id":               id,
		"title":            title,
		"description":      b.String(),
		"duration_seconds": 120 + r.IntN(3480),
		"created_at":       ts,
		"metadata":         meta,
	}}
}

func transcriptRecord(conn string, n int, created time.Time, personal bool) seedRecord {
	id := fmt.Sprintf("tr-%d", n)
	r := rng(conn, StreamTranscripts, id)
	lang := "en"
	vocab := append(append([]string{}, natoWords...), workWords...)
	if r.IntN(3) == 0 {
		lang = "it"
		vocab = append(append([]string{}, natoWords...), italianWords...)
	}
	header := fmt.Sprintf("Transcript %d.", n)
	if personal {
		header = fmt.Sprintf("Personal recording transcript %d.", n)
	}
	ts := stamp(created)
	return seedRecord{conn: conn, stream: StreamTranscripts, id: id, emittedAt: ts, fields: map[string]any{
		"id":         id,
		"video_id":   fmt.Sprintf("vid-%d", n),
		"language":   lang,
		"text":       transcriptText(r, header, n, vocab),
		"created_at": ts,
	}}
}

// noteSpec is the hand-written part of one note; bodies are completed by the generator.
type noteSpec struct {
	title, intro string
	file, media  string // attachment filename and media type; empty means no attachment
	large        bool
}

var noteSpecs = [NoteCount]noteSpec{
	{"Groceries and errands", "Pick up oat milk, lemons and basil; return the library books before Friday.", "receipt.pdf", "application/pdf", false},
	{"Quarterly planning notes", "Draft goals for the quarter: ship the export flow and trim the backlog.", "q1-plan.pdf", "application/pdf", false},
	{"zephyrmarker checklist", "Things to verify before the move: meter readings, keys, parking permit.", "checklist.png", "image/png", false},
	{"Quokka sighting plan", "Ferry times to the island and where the rangers suggest waiting at dawn.", "island-map.png", "image/png", false},
	{"Reading list", "Finish the lighthouse keeper novel; the zephyrmarker chapter cites the harbour map.", "reading-list.pdf", "application/pdf", false},
	{"Trip ideas for spring", "Coastal train, two nights in the old città, then the lakes if the weather holds.", "trip-map.png", "image/png", true},
	{"zephyrmarker follow-ups", "Reply to the landlord, renew the bike insurance, book the dentist.", "followups.pdf", "application/pdf", false},
	{"Kitchen renovation budget", "Quotes for cabinets and tiles; the plumber needs a date before March.", "budget.pdf", "application/pdf", false},
	{"Book club questions", "Why does the narrator never name the town? What changes after the flood?", "", "", false},
	{"Garden layout sketch", "Tomatoes along the south fence, herbs by the door, beans on the trellis.", "", "", false},
	{"Meeting prep: vendor review", "Compare the three vendor offers on price, support hours and exit terms.", "vendor-notes.pdf", "application/pdf", false},
	{"Launch watch party", "Snacks, a projector and the countdown stream 🚀 — invite the neighbours, così è più divertente.", "launch.png", "image/png", false},
}

var noteFolders = []string{"work", "personal", "ideas"}

func noteRecord(n int) (seedRecord, *seedBlob) {
	id := fmt.Sprintf("note-%d", n)
	r := rng(ConnNotes, StreamNotes, id)
	spec := noteSpecs[n]
	var b strings.Builder
	b.WriteString(spec.intro)
	vocab := append(append([]string{}, workWords...), natoWords...)
	prose(&b, r, vocab, 220+r.IntN(260))
	ts := stamp(baseTime.Add(time.Duration(2+3*n)*24*time.Hour + 8*time.Hour + 30*time.Minute))
	var attachment any
	var blob *seedBlob
	if spec.file != "" {
		bl := makeBlob(id, spec.file, spec.media, spec.large)
		blob = &bl
		attachment = map[string]any{
			"blob_id":    bl.id,
			"media_type": bl.mediaType,
			"size_bytes": len(bl.bytes),
			"filename":   bl.filename,
			"sha256":     bl.sha256,
		}
	}
	return seedRecord{conn: ConnNotes, stream: StreamNotes, id: id, emittedAt: ts, fields: map[string]any{
		"id":         id,
		"title":      spec.title,
		"body":       b.String(),
		"folder":     noteFolders[n%len(noteFolders)],
		"created_at": ts,
		"attachment": attachment,
	}}, blob
}

// generate returns every seeded record and blob, deterministically.
func generate() ([]seedRecord, []seedBlob) {
	var recs []seedRecord
	// main: 40 videos and 40 transcripts at midnight; peer (personal): 8 of each at noon.
	for _, c := range []struct {
		id       string
		count    int
		at       time.Duration
		personal bool
	}{{ConnLoomMain, 40, 0, false}, {ConnLoomPeer, 8, 12 * time.Hour, true}} {
		for _, record := range []func(string, int, time.Time, bool) seedRecord{videoRecord, transcriptRecord} {
			for n := range c.count {
				recs = append(recs, record(c.id, n, baseTime.Add(time.Duration(n)*24*time.Hour+c.at), c.personal))
			}
		}
	}
	var blobs []seedBlob
	for n := range NoteCount {
		rec, blob := noteRecord(n)
		recs = append(recs, rec)
		if blob != nil {
			blobs = append(blobs, *blob)
		}
	}
	return recs, blobs
}
