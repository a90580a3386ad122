// Package textnorm holds the text rules that a paper snapshot's writer and
// its reader must share: which characters count as CJK, how CJK runs are
// spaced out for the unicode61 full-text tokenizer (and joined again for
// display), and how facet values are normalized.
package textnorm
