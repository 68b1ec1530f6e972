package mrkdwn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func readReply(tb testing.TB) string {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "reply.md"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(src)
}

// seeds returns the golden inputs, so fuzzing starts from every construct.
func seeds(f *testing.F) []string {
	f.Helper()
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, in := range inputs {
		src, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(src))
	}
	return append(out, "", "**a****b**", "<@U1|", "<!date^", "[a](<b>)", "- [x]", "|a|\n|-|\n|`|`|", "\x00\xff\r")
}

func FuzzConvert(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Convert(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Convert(%q) = %q: not valid UTF-8", in, out)
		}
		if strings.TrimRight(out, " \t\n") != out {
			t.Fatalf("Convert(%q) = %q: trailing whitespace", in, out)
		}
		if strings.TrimSpace(in) == "" && out != "" {
			t.Fatalf("Convert(%q) = %q, want empty", in, out)
		}
		if openFence(out) {
			t.Fatalf("Convert(%q) = %q: unbalanced code fences", in, out)
		}
		if again := Convert(in); again != out {
			t.Fatalf("Convert(%q) is not deterministic", in)
		}
		checkParts(t, out, 64, Split(out, 64))
	})
}

func FuzzSplit(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s, 40)
		f.Add(Convert(s), 100)
	}
	f.Add("```\n"+strings.Repeat("x", 100)+"\n```", 16)
	f.Add("> ```\n> a b c d e f g h\n> ```", 20)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		// Small limits exercise the most cuts; keep them in a useful range.
		limit = minLimit + int(uint(limit)%500)
		checkParts(t, text, limit, Split(text, limit))
	})
}
