// Package layout holds the test that keeps the tree's import rules: which
// product group under internal/ may import which. It has no code of its own;
// docs/architecture.md states the rules the test enforces.
package layout
