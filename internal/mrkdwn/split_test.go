package mrkdwn

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	code := "```\n" + strings.Repeat("0123456789\n", 5) + "```"
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"empty", "", 100, nil},
		{"blank", " \n\t\n", 100, nil},
		{"fits", "hello\nworld", 100, []string{"hello\nworld"}},
		{"trims blank edges", "\n\n  \nhello   \n\n", 100, []string{"hello"}},
		{"exact limit", strings.Repeat("x", 20), 20, []string{strings.Repeat("x", 20)}},
		{"one over limit", strings.Repeat("x", 21), 20, []string{strings.Repeat("x", 20), "x"}},
		{"line boundaries", "aaaaaaa\nbbbbbbb\nccccccc", 16, []string{"aaaaaaa\nbbbbbbb", "ccccccc"}},
		{"exact limit with lines", "aaaaaaa\nbbbbbbbb", 16, []string{"aaaaaaa\nbbbbbbbb"}},
		{"prefers blank line", "first paragraph here\n\nsecond one\nand more lines", 30,
			[]string{"first paragraph here", "second one\nand more lines"}},
		{"long line at whitespace", "one two three four five six seven", 16,
			[]string{"one two three", "four five six", "seven"}},
		{"long line without whitespace", "abcdefghijklmnopqrstuvwxyz", 16,
			[]string{"abcdefghijklmnop", "qrstuvwxyz"}},
		{"multi-byte runes", strings.Repeat("é", 20), 17,
			[]string{strings.Repeat("é", 8), strings.Repeat("é", 8), strings.Repeat("é", 4)}},
		{"wide runes", strings.Repeat("日本語", 4), 16,
			[]string{"日本語日本", "語日本語日", "本語"}},
		{"code block moves to next part", "intro\n" + code, 40, []string{
			"intro",
			"```\n0123456789\n0123456789\n0123456789\n```",
			"```\n0123456789\n0123456789\n```",
		}},
		{"code block reopened", code, 30, []string{
			"```\n0123456789\n0123456789\n```",
			"```\n0123456789\n0123456789\n```",
			"```\n0123456789\n```",
		}},
		{"quoted code block reopened", "> ```\n> qqqqqqqqqq\n> rrrrrrrrrr\n> ```", 24, []string{
			"> ```\n> qqqqqqqqqq\n> ```",
			"> ```\n> rrrrrrrrrr\n> ```",
		}},
		{"long line in code", "```\n" + strings.Repeat("z", 30) + "\n```", 20, []string{
			"```\nzzzzzzzzzzzz\n```",
			"```\nzzzzzzzzzzzz\n```",
			"```\nzzzzzz\n```",
		}},
		{"unclosed fence closed", "```\nopen code\nno close", 100, []string{"```\nopen code\nno close\n```"}},
		{"inline fences do not toggle", "```a``` not a fence\n```b```", 20,
			[]string{"```a``` not a fence", "```b```"}},
		{"long fence opener", "```0000000000", 0, []string{"```000000000\n```", "```\n0\n```"}},
		{"limit raised to minimum", "abc def", 1, []string{"abc def"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Split(%q, %d)\n got %q\nwant %q", tt.text, tt.limit, got, tt.want)
			}
			checkParts(t, tt.text, max(tt.limit, minLimit), got)
		})
	}
}

// TestSplitReply splits a converted realistic reply at several limits.
func TestSplitReply(t *testing.T) {
	text := Convert(strings.Repeat(readReply(t)+"\n\n", 5))
	for _, limit := range []int{40, 100, 500, MaxMessageLen} {
		parts := Split(text, limit)
		checkParts(t, text, limit, parts)
	}
	if parts := Split(text, len(text)); len(parts) != 1 || parts[0] != text {
		t.Errorf("Split at len(text) = %d parts, want the text whole", len(parts))
	}
}

// checkParts asserts Split's guarantees: every part is non-blank, at most
// limit bytes, valid UTF-8 when the text is, has no blank first line or
// trailing whitespace, and leaves no code block open; and no content is
// lost (only whitespace, and the backticks and quote markers of added
// fences, may differ).
func checkParts(t *testing.T, text string, limit int, parts []string) {
	t.Helper()
	for i, p := range parts {
		switch {
		case len(p) > limit:
			t.Errorf("part %d is %d bytes, limit %d: %q", i, len(p), limit, p)
		case strings.TrimSpace(p) == "":
			t.Errorf("part %d is blank", i)
		case strings.TrimRightFunc(p, unicode.IsSpace) != p:
			t.Errorf("part %d ends with whitespace: %q", i, p)
		case strings.HasPrefix(p, "\n"):
			t.Errorf("part %d starts with a blank line: %q", i, p)
		case utf8.ValidString(text) && !utf8.ValidString(p):
			t.Errorf("part %d is not valid UTF-8: %q", i, p)
		case openFence(p):
			t.Errorf("part %d leaves a code block open: %q", i, p)
		}
	}
	if !sameContent(text, strings.Join(parts, "\n")) {
		t.Errorf("content changed:\n text %q\nparts %q", text, parts)
	}
}

// openFence reports whether s ends inside a code block, reading fences the
// way Split does.
func openFence(s string) bool {
	open := false
	for _, l := range strings.Split(s, "\n") {
		if prefix, ok := fencePrefix(l); ok && strings.Count(l[len(prefix):], fenceMark)%2 == 1 {
			open = !open
		}
	}
	return open
}

// sameContent reports whether got holds want's non-whitespace bytes in
// order, with at most added backticks and '>' between them.
func sameContent(want, got string) bool {
	w, g := strip(want), strip(got)
	i := 0
	for j := 0; j < len(g); j++ {
		if i < len(w) && g[j] == w[i] {
			i++
			continue
		}
		if g[j] != '`' && g[j] != '>' {
			return false
		}
	}
	return i == len(w)
}

func strip(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// TestSplitLargeInput guards against quadratic cutting: each input is one
// long line or many lines, split at the smallest limit. Quadratic cutting
// took over a second on inputs this size (minutes at 1 MiB); linear takes
// milliseconds.
func TestSplitLargeInput(t *testing.T) {
	const n = 1 << 16
	inputs := map[string]string{
		"one long line":   strings.Repeat("x", n),
		"long backticks":  strings.Repeat("`", n),
		"long quote":      strings.Repeat("> ", n/2) + "```",
		"long words":      strings.Repeat("a ", n/2),
		"many lines":      strings.Repeat("x\n", n/2),
		"open code block": "```\n" + strings.Repeat("x\n", n/2),
		"many fences":     strings.Repeat("```\n", n/4),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			checkParts(t, in, minLimit, Split(in, minLimit))
		})
	}
}
