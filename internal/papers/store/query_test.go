package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRewriteQuery(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"words", "Vision Transformer", `"vision" "transformer"`},
		{"operators kept", "diffusion or graph AND attention", `"diffusion" OR "graph" AND "attention"`},
		{"leading and trailing operators dropped", "OR diffusion AND", `"diffusion"`},
		{"doubled operators collapse", "a OR AND b", `"a" AND "b"`},
		{"only operators", "AND OR", ``},
		{"fts syntax dropped", `title:"attention" NEAR(a b) -c *d ^e`, `"title" "attention" "near" "a" "b" "c" "d" "e"`},
		{"quotes cannot escape", `"unbalanced`, `"unbalanced"`},
		{"inner punctuation kept", "gpt-4.5 c++", `"gpt-4.5" "c"`},
		{"chinese run spaced", "视觉变换器", `"视 觉 变 换 器"`},
		{"chinese punctuation separates", "医学图像，分割。", `"医 学 图 像" "分 割"`},
		{"mixed script split", "用Transformer做分割", `"用" "transformer" "做 分 割"`},
		{"japanese", "大規模言語モデル", `"大 規 模 言 語 モ デ ル"`},
		{"accents kept", "Café résumé", `"café" "résumé"`},
		{"empty", "   ", ``},
		{"punctuation only", "!!! ??? ...", ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RewriteQuery(tc.in); got != tc.want {
				t.Fatalf("RewriteQuery(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestSnippetMarkdown(t *testing.T) {
	o, c := string(markOpen), string(markClose)
	tests := []struct{ name, in, want string }{
		{"one match", "we study " + o + "vision" + c + " models", "we study **vision** models"},
		{"adjacent latin matches merge", o + "vision" + c + " " + o + "transformer" + c + " wins", "**vision transformer** wins"},
		{"cjk joined and merged", "基 于 " + o + "视" + c + " " + o + "觉" + c + " 的 方 法", "基于**视觉**的方法"},
		{"text asterisks escaped", "a *b* and " + o + "c" + c, `a \*b\* and **c**`},
		{"white space collapsed", "line one\n\nline  " + o + "two" + c, "line one line **two**"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SnippetMarkdown(tc.in); got != tc.want {
				t.Fatalf("SnippetMarkdown = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzRewriteQuery checks that any text becomes an expression FTS5
// accepts: never a syntax error, whatever the user typed.
func FuzzRewriteQuery(f *testing.F) {
	for _, seed := range []string{"vision transformer", `"a" OR`, "NEAR(a b, 3)", "视觉*变换", "a AND OR b", "col:term", "^x", "((", "-", "'\"", "AND", "e\u0301"} {
		f.Add(seed)
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61')"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if !utf8.ValidString(q) {
			return
		}
		expr := RewriteQuery(q)
		if expr == "" {
			return
		}
		if strings.HasPrefix(expr, "AND") || strings.HasPrefix(expr, "OR") || strings.HasSuffix(expr, "AND") || strings.HasSuffix(expr, "OR") {
			t.Fatalf("dangling operator in %q", expr)
		}
		var n int
		if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM t WHERE t MATCH ?", expr).Scan(&n); err != nil {
			t.Fatalf("RewriteQuery(%q) = %q: %v", q, expr, err)
		}
	})
}
