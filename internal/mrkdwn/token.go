package mrkdwn

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// kindToken is the node kind of a platform token in the markdown tree.
var kindToken = ast.NewNodeKind("MrkdwnToken")

// tokenNode is a platform token the agent wrote on purpose: a mention
// (<@U…>), a channel reference (<#C…|name>), a special mention (<!here>,
// <!subteam^…>, <!date^…>) or an already formed link (<https://…|text>).
// It is rendered byte for byte.
type tokenNode struct {
	ast.BaseInline
	seg text.Segment
}

// Kind implements ast.Node.
func (n *tokenNode) Kind() ast.NodeKind { return kindToken }

// Dump implements ast.Node.
func (n *tokenNode) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Value": string(n.seg.Value(source))}, nil)
}

// tokenParser recognises platform tokens before goldmark's autolink and raw
// HTML parsers see the '<': left to them, <@U123> is literal text (and would
// be escaped), <!here> could be read as an HTML declaration, and
// <https://x|a b> as plain text followed by a linkified URL.
type tokenParser struct{}

var _ parser.InlineParser = tokenParser{}

// Trigger implements parser.InlineParser.
func (tokenParser) Trigger() []byte { return []byte{'<'} }

// Parse implements parser.InlineParser.
func (tokenParser) Parse(_ ast.Node, block text.Reader, _ parser.Context) ast.Node {
	line, seg := block.PeekLine()
	n := scanToken(line)
	if n <= 0 {
		return nil
	}
	block.Advance(n)
	return &tokenNode{seg: text.NewSegment(seg.Start, seg.Start+n)}
}

// scanToken returns the length of the platform token at the start of b, or 0
// if b does not start with one. It is deliberately strict so that ordinary
// text such as "a <b> c" or "x <@ y>" is still escaped.
func scanToken(b []byte) int {
	if len(b) < 3 || b[0] != '<' {
		return 0
	}
	switch b[1] {
	case '@', '#':
		// <@U024BE7LH>, <@W…|name>, <#C024BE7LH>, <#C…|general>.
		i := 2
		if i >= len(b) || !isUpper(b[i]) {
			return 0
		}
		for i < len(b) && (isUpper(b[i]) || isDigit(b[i])) {
			i++
		}
		return scanLabel(b, i)
	case '!':
		return scanSpecial(b)
	}
	return scanLink(b)
}

// scanSpecial scans <!here>, <!channel>, <!everyone> (each optionally with a
// |label), <!subteam^ID…> and <!date^…>.
func scanSpecial(b []byte) int {
	rest := b[2:]
	for _, kw := range []string{"here", "channel", "everyone"} {
		if hasPrefix(rest, kw) {
			return scanLabel(b, 2+len(kw))
		}
	}
	for _, kw := range []string{"subteam^", "date^"} {
		if hasPrefix(rest, kw) {
			i := 2 + len(kw)
			if i >= len(b) || b[i] == '|' || b[i] == '>' {
				return 0
			}
			for i < len(b) && b[i] != '|' && b[i] != '>' && b[i] != '<' && b[i] != '\n' {
				i++
			}
			return scanLabel(b, i)
		}
	}
	return 0
}

// scanLink scans <http://…>, <https://…|text> and <mailto:…|text>: a URL
// without spaces, optionally followed by |label.
func scanLink(b []byte) int {
	i := 1
	switch {
	case hasPrefixFold(b[i:], "http://"):
		i += len("http://")
	case hasPrefixFold(b[i:], "https://"):
		i += len("https://")
	case hasPrefixFold(b[i:], "mailto:"):
		i += len("mailto:")
	default:
		return 0
	}
	start := i
	for i < len(b) && b[i] > ' ' && b[i] != '<' && b[i] != '>' && b[i] != '|' {
		i++
	}
	if i == start {
		return 0
	}
	return scanLabel(b, i)
}

// scanLabel finishes a token at b[i]: either '>' or '|' followed by a label
// that holds no '<', '>' or line break, then '>'.
func scanLabel(b []byte, i int) int {
	if i >= len(b) {
		return 0
	}
	if b[i] == '>' {
		return i + 1
	}
	if b[i] != '|' {
		return 0
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '>':
			return i + 1
		case '<', '\n', '\r':
			return 0
		}
	}
	return 0
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func hasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}

func hasPrefixFold(b []byte, p string) bool {
	if len(b) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}
