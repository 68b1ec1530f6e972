package mrkdwn

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// style is the inline rendering state.
type style struct {
	strong, emph, strike bool // already inside: mrkdwn markers do not nest

	plain   bool // no markup: link labels, image alt text, table cells
	raw     bool // no escaping: table cells, which end up inside a code block
	oneLine bool // line breaks become spaces: headings, labels
}

// esc escapes s unless the output is bound for a code block.
func (st style) esc(s string) string {
	if st.raw {
		return s
	}
	return escape(s)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape replaces the three characters mrkdwn treats as control characters,
// and defuses "```", which would start a code block on the platform.
func escape(s string) string { return defuseFences(escaper.Replace(s)) }

// inlines renders the inline children of parent.
func (r *renderer) inlines(parent ast.Node, st style) string {
	var b strings.Builder
	for c := parent.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(&b, c, st)
	}
	return b.String()
}

func (r *renderer) inline(b *strings.Builder, n ast.Node, st style) {
	switch n := n.(type) {
	case *ast.Text:
		v := r.text(n.Segment)
		if n.IsRaw() {
			b.WriteString(st.esc(string(v)))
		} else {
			b.WriteString(st.esc(unescape(v)))
		}
		if n.SoftLineBreak() || n.HardLineBreak() {
			if st.oneLine {
				b.WriteByte(' ')
			} else {
				b.WriteByte('\n')
			}
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			b.WriteString(st.esc(string(n.Value)))
		} else {
			b.WriteString(st.esc(unescape(n.Value)))
		}
	case *ast.CodeSpan:
		code := r.codeSpan(n)
		if st.plain {
			b.WriteString(st.esc(code))
		} else if code != "" {
			// Verbatim: the platform does not format or unescape inside code.
			b.WriteString(defuseFences("`" + code + "`"))
		}
	case *ast.Emphasis:
		inner, marker, already := st, "_", st.emph
		inner.emph = true
		if n.Level >= 2 {
			inner, marker, already = st, "*", st.strong
			inner.strong = true
		}
		// Blanks inside come only from forgiven "** spaced **" markup,
		// and the run's outer side is blank already.
		s := strings.Trim(r.inlines(n, inner), " \t")
		if st.plain || already {
			b.WriteString(s)
		} else {
			r.marked(b, n, wrap(s, marker))
		}
	case *east.Strikethrough:
		inner := st
		inner.strike = true
		s := r.inlines(n, inner)
		if st.plain || st.strike {
			b.WriteString(s)
		} else {
			r.marked(b, n, wrap(s, "~"))
		}
	case *ast.Link:
		r.link(b, n, n.Destination, st)
	case *ast.Image:
		r.link(b, n, n.Destination, st)
	case *ast.AutoLink:
		r.autoLink(b, n, st)
	case *ast.RawHTML:
		// The platform has no HTML: show it as typed.
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			s := string(seg.Value(r.src))
			if st.oneLine {
				s = strings.ReplaceAll(s, "\n", " ")
			}
			b.WriteString(st.esc(s))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("☑ ")
		} else {
			b.WriteString("☐ ")
		}
	case *tokenNode:
		v := string(n.seg.Value(r.src))
		if st.plain {
			// Inside a link label a token cannot work; show it as typed.
			v = st.esc(v)
		}
		b.WriteString(defuseFences(v))
	default:
		b.WriteString(r.inlines(n, st))
	}
}

// text returns seg's bytes without those strays dropped.
func (r *renderer) text(seg text.Segment) []byte {
	v := seg.Value(r.src)
	if seg.Padding > 0 {
		// Tab padding comes with indented code, where no run is parsed.
		return v
	}
	i, _ := slices.BinarySearchFunc(r.drop, seg.Start, func(d text.Segment, start int) int {
		if d.Stop <= start {
			return -1
		}
		return 1
	})
	if i == len(r.drop) || r.drop[i].Start >= seg.Stop {
		return v
	}
	out := make([]byte, 0, len(v))
	pos := seg.Start
	for ; i < len(r.drop) && r.drop[i].Start < seg.Stop; i++ {
		d := r.drop[i]
		if d.Start > pos {
			out = append(out, r.src[pos:d.Start]...)
		}
		pos = max(pos, d.Stop)
	}
	if pos < seg.Stop {
		out = append(out, r.src[pos:seg.Stop]...)
	}
	return out
}

// zws (zero-width space) parts a marker from a letter or digit outside it:
// the platform reads "word*bold*" and "*bold*text" as plain text.
const zws = "\u200b"

// marked writes s, the text of n between its markers, with a zero-width
// space on each side where a word would touch a marker.
func (r *renderer) marked(b *strings.Builder, n ast.Node, s string) {
	if s == "" {
		return
	}
	if last, _ := utf8.DecodeLastRuneInString(b.String()); isWord(last) {
		b.WriteString(zws)
	}
	b.WriteString(s)
	if next, ok := n.NextSibling().(*ast.Text); ok {
		if first, _ := utf8.DecodeRune(r.text(next.Segment)); isWord(first) {
			b.WriteString(zws)
		}
	}
}

// codeSpan returns a code span's content; line endings inside a span are
// spaces, as CommonMark renders them.
func (r *renderer) codeSpan(n *ast.CodeSpan) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(r.src))
		case *ast.String:
			b.Write(c.Value)
		}
	}
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// wrap puts marker around each non-blank line of s: mrkdwn formatting does
// not cross line breaks, and the markers must touch the text.
func wrap(s, marker string) string {
	if strings.TrimSpace(s) == "" {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		start := strings.Index(l, t)
		lines[i] = l[:start] + marker + t + marker + l[start+len(t):]
	}
	return strings.Join(lines, "\n")
}

// link renders a Link or an Image (whose label is its alt text) as
// <url|label>, or <url> when the label is empty or the URL itself.
func (r *renderer) link(b *strings.Builder, n ast.Node, dest []byte, st style) {
	label := strings.TrimSpace(r.inlines(n, style{plain: true, raw: true, oneLine: true}))
	url := string(util.URLEscape(dest, true))
	plainURL := string(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(dest))))
	switch {
	case st.plain:
		b.WriteString(st.esc(label))
		if url != "" && label != plainURL && label != url {
			if label != "" {
				b.WriteByte(' ')
			}
			b.WriteString(st.esc("(" + plainURL + ")"))
		}
	case !hasScheme(url):
		// A relative link (README.md, #section) means nothing in chat:
		// keep the text.
		if _, isImage := n.(*ast.Image); isImage {
			b.WriteString(escape(label))
		} else {
			b.WriteString(r.inlines(n, st))
		}
	case label == "" || label == plainURL || label == url:
		b.WriteString("<" + escape(url) + ">")
	default:
		b.WriteString("<" + escape(url) + "|" + escape(label) + ">")
	}
}

// autoLink renders <https://…>, <a@b.c> and linkified bare URLs.
func (r *renderer) autoLink(b *strings.Builder, n *ast.AutoLink, st style) {
	url := string(n.URL(r.src))
	label := string(n.Label(r.src))
	if n.AutoLinkType == ast.AutoLinkEmail && !hasPrefixFold([]byte(url), "mailto:") {
		url = "mailto:" + url
	}
	if st.plain {
		b.WriteString(st.esc(label))
		return
	}
	u := escape(string(util.URLEscape([]byte(url), false)))
	if n.AutoLinkType == ast.AutoLinkURL && r.bare(n) {
		// A bare URL reads as its site, as a person would link it; the
		// host is what the link leads to, so the label cannot mislead.
		label = host(url)
	}
	if label == url || label == "" {
		b.WriteString("<" + u + ">")
		return
	}
	b.WriteString("<" + u + "|" + escape(label) + ">")
}

// bare reports whether an autolink was written without angle brackets
// (linkified), as "see https://example.com/x".
func (r *renderer) bare(n *ast.AutoLink) bool {
	// The parser puts an autolink at its trigger: the '<' of "<ftp://…>",
	// the URL itself or a blank before it when linkified.
	p := n.Pos()
	return p < 0 || p >= len(r.src) || r.src[p] != '<'
}

// host returns rawURL's host (with its port) as written, or "" if it has
// none. As written: decoding its %XX could make it invalid UTF-8.
func host(rawURL string) string {
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:] // never show credentials
	}
	return rest
}

// hasScheme reports whether url starts with an RFC 3986 scheme and ':'.
// One-letter schemes are refused: "C:" is a drive, not a link.
func hasScheme(url string) bool {
	for i := 0; i < len(url); i++ {
		c := url[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (isDigit(c) || c == '+' || c == '-' || c == '.'):
		case c == ':':
			return i > 1
		default:
			return false
		}
	}
	return false
}

// unescape resolves markdown backslash escapes and HTML entity references in
// one pass, as goldmark's HTML writer does, so that "\&amp;" stays literal.
func unescape(v []byte) string {
	if !strings.ContainsAny(string(v), `\&`) {
		return string(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			i++
			b.WriteByte(v[i])
		case c == '&':
			if n, s := entity(v[i:]); n > 0 {
				b.WriteString(s)
				i += n - 1
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// entity decodes the character reference at the start of v ("&amp;",
// "&#35;", "&#x1F600;") and returns its length, or 0 if there is none.
func entity(v []byte) (int, string) {
	if len(v) < 3 || v[0] != '&' {
		return 0, ""
	}
	if v[1] != '#' {
		i := 1
		for i < len(v) && util.IsAlphaNumeric(v[i]) {
			i++
		}
		if i == 1 || i >= len(v) || v[i] != ';' {
			return 0, ""
		}
		e, ok := util.LookUpHTML5EntityByName(string(v[1:i]))
		if !ok {
			return 0, ""
		}
		return i + 1, string(e.Characters)
	}
	// CommonMark: 1-7 decimal or 1-6 hexadecimal digits.
	start, base, maxDigits, isDigitFn := 2, 10, 7, util.IsNumeric
	if len(v) > 2 && (v[2] == 'x' || v[2] == 'X') {
		start, base, maxDigits, isDigitFn = 3, 16, 6, util.IsHexDecimal
	}
	i := start
	for i < len(v) && isDigitFn(v[i]) {
		i++
	}
	if i == start || i-start > maxDigits || i >= len(v) || v[i] != ';' {
		return 0, ""
	}
	code, err := strconv.ParseUint(string(v[start:i]), base, 32)
	if err != nil {
		return 0, ""
	}
	return i + 1, string(util.ToValidRune(rune(code)))
}
