// Command unseengen writes the table of package unseen
// (internal/mcpserver/unseen/table.go): every code point hidden wherever
// it stands, derived from the Unicode character properties that Go's
// unicode package carries (see Hidden), as a two-level bitmap. It is run
// by `go generate` in that package; the generated file is committed.
//
// Default_Ignorable_Code_Point is derived as DerivedCoreProperties.txt
// derives it: Other_Default_Ignorable_Code_Point + Cf + Variation_Selector
// - White_Space - U+FFF9..U+FFFB - U+13430..U+1343F -
// Prepended_Concatenation_Mark.
package main
