// Package unseen finds and shows the characters a person cannot see but a
// model reads, in text written by strangers (mail, chats, shared
// documents) before it reaches a client.
//
// A rune is hidden when it is
//   - a Unicode tag character (U+E0000–U+E007F: invisible everywhere, read
//     by models as the ASCII they mirror),
//   - a format character (general category Cf: zero-width characters, bidi
//     embeddings, overrides, isolates and marks, U+2060–U+2064, U+FEFF,
//     U+00AD …),
//   - a C0 or C1 control other than tab, line feed and carriage return
//     (U+0000–U+001F, U+007F–U+009F),
//   - a noncharacter (U+FDD0–U+FDEF and every U+xxFFFE, U+xxFFFF),
//   - a private-use code point (category Co), or
//   - a variation selector (U+FE00–U+FE0F, U+E0100–U+E01EF).
//
// Two are kept where they only shape what is seen, so emoji render as
// sent: U+FE0E and U+FE0F (text and emoji presentation) right after a
// rune that is not hidden, and U+200D (zero-width joiner) between an emoji
// (a rune of category So, an emoji modifier U+1F3FB–U+1F3FF, or U+FE0F)
// and a rune of category So. Each can carry at most one bit beside a
// visible character, never a text. Every other variation selector, and
// these two anywhere else, is hidden: runs of selectors can spell bytes.
//
// Bytes that are not UTF-8 are not hidden: every JSON encoder shows them as
// U+FFFD, which is visible.
//
// Has scans for a hidden rune (an ASCII text is read eight bytes at a
// time); Show replaces each run of hidden runes by a marker that names
// them, bounded whatever the run's length; EscapeJSON writes each as a
// JSON \u escape, so the decoded value is unchanged; ShowJSON rewrites the
// strings of a JSON document, with markers or escapes by member.
package unseen
