package mrkdwn

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/fake/golden"
)

// TestConvertGolden converts every testdata/*.md and compares the result
// with the .golden file beside it, byte for byte (goldens have no final
// newline because Convert emits none). Regenerate with -update.
func TestConvertGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/*.md inputs")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".md")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := Convert(string(src))
			golden.Check(t, strings.TrimSuffix(in, ".md")+".golden", []byte(got))
		})
	}
}

// TestConvertSloppy checks that none of the sloppy markup in sloppy.md
// leaves doubled stars in the message, which the platform shows as they
// are.
func TestConvertSloppy(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "sloppy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Convert(string(src)); strings.Contains(got, "**") {
		t.Errorf("Convert(sloppy.md) leaves doubled stars:\n%s", got)
	}
}

// TestConvertPassthrough checks that text needing no conversion comes out
// byte for byte.
func TestConvertPassthrough(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "passthrough.md"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"plain":        "Hello, world. Nothing to see here.",
		"emoji":        "Shipped :tada: :white_check_mark: :+1:",
		"mentions":     "cc <@U024BE7LH> <@W0123ABC|alice> in <#C024BE7LH|general> <!here>",
		"entities":     "R&amp;D &lt;3 &gt; 2",
		"links":        "<https://example.com/a_b_c?x=1&y=2|docs> and <https://example.com>",
		"soft breaks":  "line one\nline two\nline three",
		"paragraphs":   "one\n\ntwo",
		"bullets":      "• already\n• a list",
		"mrkdwn":       "_italic_ and ~strike~ and `code`",
		"date":         "<!date^1392734382^{date_short}|Feb 18>",
		"subteam":      "<!subteam^SAZ94GDB8|@oncall> please look",
		"passthrough":  strings.TrimRight(string(src), "\n"),
		"intraword":    "snake_case and 2 * 3 stay",
		"unicode":      "日本語のテキスト — ünïcödé ✓",
		"special only": "<!channel>",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Convert(in); got != in {
				t.Errorf("Convert(%q) = %q, want it unchanged", in, got)
			}
		})
	}
}

func TestConvert(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"blank", " \n\t\n", ""},
		{"trailing newlines", "hi\n\n\n", "hi"},
		{"crlf", "a\r\nb\r\n\r\nc", "a\nb\n\nc"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"nul", "a\x00b", "a\uFFFDb"},
		{"strong", "**b**", "*b*"},
		{"emphasis", "*i*", "_i_"},
		{"strike", "~~s~~", "~s~"},
		{"heading", "# Title", "*Title*"},
		{"empty heading", "#", ""},
		{"link", "[t](https://x.io)", "<https://x.io|t>"},
		{"link text is url", "[https://x.io](https://x.io)", "<https://x.io>"},
		{"link empty text", "[](https://x.io)", "<https://x.io>"},
		{"link pipe in url", "[t](https://x.io/a|b)", "<https://x.io/a%7Cb|t>"},
		{"link angle in text", "[a > b](https://x.io)", "<https://x.io|a &gt; b>"},
		{"link star in text", "[2 * 3](https://x.io)", "<https://x.io|2 * 3>"},
		{"mention in link text", "[hi <@U1>](https://x.io)", "<https://x.io|hi &lt;@U1&gt;>"},
		{"image", "![alt](https://x.io/p.png)", "<https://x.io/p.png|alt>"},
		{"relative image", "![alt](p.png)", "alt"},
		{"email", "<a@b.io>", "<mailto:a@b.io|a@b.io>"},
		{"inline code verbatim", "`<&>*_~`", "`<&>*_~`"},
		{"empty code block", "```\n```", ""},
		{"code keeps trailing space", "```\na  \n```", "```\na  \n```"},
		{"fence in code", "````\n```\n````", "```\n``\u200b`\n```"},
		{"long backtick run", "``````\n`````\n``````", "```\n``\u200b``\u200b`\n```"},
		{"fence in text", "\\`\\`\\`x", "``\u200b`x"},
		{"thematic break", "---", thematicBreak},
		{"task", "- [x] a", "• ☑ a"},
		{"empty item", "-", "•"},
		{"third level bullet", "- a\n  - b\n    - c\n      - d", "• a\n    ◦ b\n        ▪ c\n            • d"},
		{"deep nesting indents no deeper", "- a\n  - b\n    - c\n      - d\n        - e", "• a\n    ◦ b\n        ▪ c\n            • d\n            ◦ e"},
		{"ordered start", "7. a\n8. b", "7. a\n8. b"},
		{"quote blank line", "> a\n>\n> b", "> a\n>\n> b"},
		{"html inline", "a <b>c</b>", "a &lt;b&gt;c&lt;/b&gt;"},
		{"html comment block", "<!-- x -->", "&lt;!-- x --&gt;"},
		{"not a token", "<@u1> <#> <!x>", "&lt;@u1&gt; &lt;#&gt; &lt;!x&gt;"},
		{"token at line start", "<!here> look", "<!here> look"},
		{"token label with pipe", "<#C1|a|b>", "<#C1|a|b>"},
		{"token label with newline", "<#C1|a\nb>", "&lt;#C1|a\nb&gt;"},
		{"strong in heading", "# **a** b", "*a b*"},
		{"emphasis over lines", "*a\nb*", "_a_\n_b_"},
		{"nested strong", "**a **b** c**", "*a b c*"},
		{"table cell escapes raw", "| a |\n|---|\n| <&> |", "```\na\n---\n<&>\n```"},
		// Markdown a model writes sloppily renders as meant (sloppy.md has more).
		{"spaced bold", "** spaced bold **", "*spaced bold*"},
		{"spaced emphasis", "a * em * b", "a _em_ b"},
		{"stray triple star", "Done ***", "Done"},
		{"underscore bold by punctuation", "__Note:__text", "*Note:*\u200btext"},
		{"bold before a word", "**Note:**text", "*Note:*\u200btext"},
		{"glob stays", "src/**/*.go and *.md", "src/**/*.go and *.md"},
		{"marker change keeps one list", "- a\n* b", "• a\n• b"},
		{"operator stays", "2 ** 10 * 3", "2 ** 10 * 3"},
		{"kwargs stay", "f(**kwargs)", "f(**kwargs)"},
		{"bare url gets its host", "see https://example.com/a/b", "see <https://example.com/a/b|example.com>"},
		{"bare url hides credentials", "https://u:p@example.com/", "<https://u:p@example.com/|example.com>"},
		{"nested quote one level", "> a\n> > b", "> a\n>\n> b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Convert(tt.in); got != tt.want {
				t.Errorf("Convert(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestConvertConcurrent shares the package's parser across goroutines; run
// with -race.
func TestConvertConcurrent(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "reply.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := Convert(string(src))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := Convert(string(src)); got != want {
				t.Error("concurrent Convert differs")
			}
		})
	}
	wg.Wait()
}

func BenchmarkConvert(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("testdata", "reply.md"))
	if err != nil {
		b.Fatal(err)
	}
	in := string(src)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Convert(in)
	}
}

// TestGoldmarkInitLight checks the patched goldmark (third_party/goldmark)
// is the one linked: no package of it builds its regular expressions or
// tables at program start (upstream's extension, util and parser packages
// allocate 264, 139 and 110 KB there).
func TestGoldmarkInitLight(t *testing.T) {
	allocs, ok := fake.InitAllocs(t)
	if !ok {
		return
	}
	seen := 0
	for pkg, n := range allocs {
		if !strings.HasPrefix(pkg, "github.com/yuin/goldmark") {
			continue
		}
		seen++
		if n > 32<<10 {
			t.Errorf("%s allocates %d bytes at program start, want ≤ 32 KiB (is third_party/goldmark replaced in go.mod?)", pkg, n)
		}
	}
	if seen == 0 {
		t.Fatalf("no goldmark package in the inittrace: %v", allocs)
	}
}
