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
		if n, bound := utf8.RuneCountInString(out), sizeBound(in, out); n > bound {
			t.Fatalf("Convert(%q) = %q: %d characters, more than %d", in, out, n, bound)
		}
		checkIndent(t, in, out)
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

// sizeBound is the most characters Convert may write for in (the platform
// counts a message's length in characters): twice in's with the
// platform's escapes (&amp; &lt; &gt;; twice, since an email's address is
// written as both the link and its label), plus %XX in a link's URL for
// each byte of a space or a character a URL cannot hold, and the fixed
// forms for what the platform lacks: the brackets, bar and scheme of each link it writes
// (<mailto:…|…>, <http://www.…|…>; every '<' in the output opens a link or
// a token, since a literal one is escaped), the line that stands for a
// horizontal rule, the fence lines around a table or an indented code
// block, and the indentation that stands for nesting (at most maxIndent a
// line, which checkIndent holds).
func sizeBound(in, out string) int {
	in = normalize(in)
	indent := 0
	for _, l := range strings.Split(out, "\n") {
		indent += len(l) - len(strings.TrimLeft(l, " "))
	}
	return 2*(utf8.RuneCountInString(in)+
		4*strings.Count(in, "&")+3*strings.Count(in, "<")+3*strings.Count(in, ">")) +
		3*strings.Count(out, "%") +
		len("<mailto:|>")*strings.Count(out, "<") +
		utf8.RuneCountInString(thematicBreak)*strings.Count(out, thematicBreak) +
		len("```\n")*strings.Count(out, "```") +
		indent
}

// checkIndent fails if a line of out outside code is indented deeper than
// maxIndent.
func checkIndent(t *testing.T, in, out string) {
	t.Helper()
	inCode := false
	for _, l := range strings.Split(out, "\n") {
		prefix, fence := fencePrefix(l)
		if fence && strings.Count(l[len(prefix):], fenceMark)%2 == 1 {
			inCode = !inCode
			continue
		}
		if !inCode && strings.HasPrefix(l, maxIndent+" ") {
			t.Fatalf("Convert(%q) = %q: line %q indented deeper than %d", in, out, l, len(maxIndent))
		}
	}
}
