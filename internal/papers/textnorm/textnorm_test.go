package textnorm

import "testing"

func TestIsCJK(t *testing.T) {
	tests := []struct {
		r    rune
		want bool
	}{
		{'视', true}, {'㐀', true}, {'豈', true}, {'あ', true}, {'カ', true}, {'한', true},
		{'a', false}, {'1', false}, {'，', false}, {'。', false}, {' ', false}, {'é', false},
	}
	for _, tc := range tests {
		t.Run(string(tc.r), func(t *testing.T) {
			if got := IsCJK(tc.r); got != tc.want {
				t.Fatalf("IsCJK(%q) = %v", tc.r, got)
			}
		})
	}
}

func TestSpaceAndJoinCJK(t *testing.T) {
	marker := func(r rune) bool { return r == '\uE000' || r == '\uE001' }
	tests := []struct {
		name, in, spaced string
	}{
		{"chinese run", "视觉变换器", "视 觉 变 换 器"},
		{"mixed", "用Transformer做视觉", "用Transformer做 视 觉"},
		{"latin only", "vision transformer", "vision transformer"},
		{"japanese", "画像認識の研究", "画 像 認 識 の 研 究"},
		{"hangul", "한국어", "한 국 어"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SpaceCJK(tc.in)
			if got != tc.spaced {
				t.Fatalf("SpaceCJK(%q) = %q, want %q", tc.in, got, tc.spaced)
			}
			if back := JoinCJK(got, nil); back != tc.in {
				t.Fatalf("JoinCJK(%q) = %q, want %q", got, back, tc.in)
			}
		})
	}
	t.Run("through markers", func(t *testing.T) {
		in := "模 型 \uE000视\uE001 \uE000觉\uE001 and \uE000vision\uE001"
		want := "模型\uE000视\uE001\uE000觉\uE001 and \uE000vision\uE001"
		if got := JoinCJK(in, marker); got != want {
			t.Fatalf("JoinCJK = %q, want %q", got, want)
		}
	})
}

func TestFacetValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  Vision   Transformer ", "vision transformer"},
		{"NeurIPS", "neurips"},
		{"医学\t图像", "医学 图像"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := FacetValue(tc.in); got != tc.want {
				t.Fatalf("FacetValue(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
