package mrkdwn

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// md is shared: goldmark keeps per-parse state in a fresh context, so one
// instance serves concurrent callers.
var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(
		parser.WithInlineParsers(
			// 250: ahead of goldmark's autolink (300) and raw HTML (400)
			// parsers, which share the '<' trigger.
			util.Prioritized(tokenParser{}, 250),
			// 450: ahead of goldmark's emphasis parser (500).
			util.Prioritized(emphasisParser{}, 450),
		),
		parser.WithASTTransformers(util.Prioritized(listJoiner{}, 100)),
	),
)

// thematicBreak stands in for a horizontal rule, which mrkdwn lacks.
const thematicBreak = "──────────"

// Convert renders GitHub-flavoured markdown as mrkdwn. Text that needs no
// conversion (plain sentences, mentions, emoji shortcodes) comes out byte
// for byte; code is copied verbatim; the result has no trailing whitespace
// or trailing newline. Convert never panics and returns "" for blank input.
func Convert(markdown string) string {
	src := []byte(normalize(markdown))
	pc := parser.NewContext()
	doc := md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	r := renderer{src: src, drop: strays(pc)}
	return join(r.blocks(doc, "\n\n", 0))
}

// normalize makes the input valid UTF-8 with "\n" line endings and no NUL
// (which CommonMark replaces with U+FFFD): the platform wants "\n", and
// goldmark would otherwise keep "\r" inside code lines.
func normalize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s
}

// line is one output line. Code lines (fences and their content) are never
// re-indented or trimmed; quote lines are not indented either, because the
// platform only sees a quote when '>' starts the line.
type line struct {
	s      string
	code   bool
	quoted bool
}

// join assembles lines into the final text, dropping trailing whitespace
// outside code and blank lines at either end.
func join(lines []line) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if l.code {
			b.WriteString(l.s)
		} else {
			b.WriteString(strings.TrimRight(l.s, " \t"))
		}
	}
	return strings.Trim(b.String(), "\n")
}

// renderer walks one parsed document.
type renderer struct {
	src  []byte
	drop []text.Segment // bytes of src left out of text (see strays), sorted
}

// blocks renders the block children of n, separated by sep ("\n\n" for a
// blank line, "\n" inside tight list items). depth counts enclosing lists.
func (r *renderer) blocks(n ast.Node, sep string, depth int) []line {
	var out []line
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		ls := r.block(c, depth)
		if len(ls) == 0 {
			continue
		}
		if len(out) > 0 && sep == "\n\n" {
			out = append(out, line{})
		}
		out = append(out, ls...)
	}
	return out
}

func (r *renderer) block(n ast.Node, depth int) []line {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return textLines(r.inlines(n, style{}))
	case *ast.Heading:
		// No headings in mrkdwn: a bold line, on one line because bold does
		// not cross line breaks.
		return textLines(wrap(r.inlines(n, style{strong: true, oneLine: true}), "*"))
	case *ast.ThematicBreak:
		return []line{{s: thematicBreak}}
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		return fence(r.linesOf(n))
	case *ast.HTMLBlock:
		s := r.linesOf(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(r.src))
		}
		return textLines(escape(strings.TrimRight(s, "\n")))
	case *ast.Blockquote:
		return quote(r.blocks(n, "\n\n", depth))
	case *ast.List:
		return r.list(n, depth)
	case *east.Table:
		return r.table(n)
	default:
		// A block from an extension this renderer does not know: keep its
		// text.
		if c := n.FirstChild(); c != nil && c.Type() == ast.TypeInline {
			return textLines(r.inlines(n, style{}))
		}
		return r.blocks(n, "\n\n", depth)
	}
}

// linesOf concatenates a block's raw lines (code blocks, HTML blocks).
func (r *renderer) linesOf(n ast.Node) string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

func textLines(s string) []line {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, "\n")
	out := make([]line, len(parts))
	for i, p := range parts {
		out[i] = line{s: p}
	}
	return out
}

// fence wraps code in ``` lines. mrkdwn has no language tag, so none is
// written. A "```" inside the code would end the block early on the
// platform, so a zero-width space is put between its backticks; that is the
// only change made to code.
func fence(code string) []line {
	code = strings.TrimRight(code, "\n")
	if strings.TrimSpace(code) == "" {
		return nil
	}
	code = defuseFences(code)
	parts := strings.Split(code, "\n")
	out := make([]line, 0, len(parts)+2)
	out = append(out, line{s: "```", code: true})
	for _, p := range parts {
		out = append(out, line{s: p, code: true})
	}
	return append(out, line{s: "```", code: true})
}

// defuseFences breaks every run of three or more backticks in s with a
// zero-width space after each pair, in one pass.
func defuseFences(s string) string {
	if !strings.Contains(s, "```") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '`' {
			run = 0
		} else if run == 2 {
			b.WriteString("\u200b")
			run = 0
		}
		if s[i] == '`' {
			run++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// quote prefixes every line with "> " (">" alone on blank lines, to leave no
// trailing space). A quote inside a quote gets no second prefix: the
// platform quotes one level only and would show the second '>' as text.
func quote(ls []line) []line {
	out := make([]line, len(ls))
	for i, l := range ls {
		if l.quoted {
			out[i] = l
			continue
		}
		l.quoted = true
		if l.s == "" {
			l.s = ">"
		} else {
			l.s = "> " + l.s
		}
		out[i] = l
	}
	return out
}

// bullets vary with nesting depth, as rendered markdown does.
var bullets = []string{"•", "◦", "▪"}

// listIndent indents the continuation lines of a list item and nested
// lists. Four spaces read as one level in the platform's proportional font;
// two barely show.
const listIndent = "    "

// maxIndent is as deep as nesting indents: deeper lists keep their bullets
// but not their own indentation, which would otherwise cost every line of
// a deeply nested item as much as its depth.
var maxIndent = strings.Repeat(listIndent, 3)

func (r *renderer) list(n *ast.List, depth int) []line {
	sep := "\n"
	if !n.IsTight {
		sep = "\n\n"
	}
	num := n.Start
	var out []line
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		marker := bullets[depth%len(bullets)]
		if n.IsOrdered() {
			marker = strconv.Itoa(num) + string(rune(n.Marker))
			num++
		}
		if len(out) > 0 && sep == "\n\n" {
			out = append(out, line{})
		}
		out = append(out, listItem(marker, r.blocks(item, sep, depth+1))...)
	}
	return out
}

// listItem puts marker in front of the item's first line and indents the
// rest. Code and quote lines stay at the start of the line so the platform
// still recognises them, and a marker never shares a line with a fence.
func listItem(marker string, body []line) []line {
	if len(body) == 0 {
		return []line{{s: marker}}
	}
	out := make([]line, 0, len(body)+1)
	first := body[0]
	if first.code || first.quoted {
		out = append(out, line{s: marker})
	} else {
		out = append(out, line{s: marker + " " + first.s})
		body = body[1:]
	}
	for _, l := range body {
		if !l.code && !l.quoted && l.s != "" && !strings.HasPrefix(l.s, maxIndent) {
			l.s = listIndent + l.s
		}
		out = append(out, l)
	}
	return out
}
