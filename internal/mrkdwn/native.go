package mrkdwn

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// NativeTable finds the first table of markdown (at the top level) that
// the platform can show as a table block — at most
// pipeline.MaxTableColumns columns, MaxTableRows rows and MaxTableChars
// characters of cell text — and returns it with the rest of the message
// around it rendered as Convert renders it (another table stays text).
// Cells keep their bold, italic, strikethrough, code and links as spans;
// a short row is padded with empty cells. Nil when there is none.
func NativeTable(markdown string) *pipeline.Table {
	if !strings.Contains(markdown, "|") {
		return nil
	}
	src := []byte(normalize(markdown))
	pc := parser.NewContext()
	doc := md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	r := renderer{src: src, drop: strays(pc)}
	var found *pipeline.Table
	var before, after []ast.Node
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*east.Table); ok && found == nil {
			if found = r.native(t); found != nil {
				continue
			}
		}
		if found == nil {
			before = append(before, c)
		} else {
			after = append(after, c)
		}
	}
	if found == nil {
		return nil
	}
	found.Before, found.After = r.group(before), r.group(after)
	return found
}

// group renders top-level blocks as Convert does.
func (r *renderer) group(nodes []ast.Node) string {
	var out []line
	for _, n := range nodes {
		ls := r.block(n, 0)
		if len(ls) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, line{})
		}
		out = append(out, ls...)
	}
	return join(out)
}

// native is t as a native table, or nil when it is past the limits.
func (r *renderer) native(t *east.Table) *pipeline.Table {
	var rows [][]pipeline.TableCell
	cols, chars := len(t.Alignments), 0
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []pipeline.TableCell
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			var spans []pipeline.TextSpan
			r.spans(cell, pipeline.TextSpan{}, &spans)
			c := trimCell(spans)
			chars += len([]rune(c.Text()))
			cells = append(cells, c)
		}
		cols = max(cols, len(cells))
		rows = append(rows, cells)
	}
	if cols == 0 || cols > pipeline.MaxTableColumns || len(rows) > pipeline.MaxTableRows || chars > pipeline.MaxTableChars {
		return nil
	}
	for i := range rows {
		for len(rows[i]) < cols {
			rows[i] = append(rows[i], pipeline.TableCell{})
		}
	}
	align := make([]string, cols)
	for i, a := range t.Alignments {
		switch a {
		case east.AlignLeft:
			align[i] = "left"
		case east.AlignCenter:
			align[i] = "center"
		case east.AlignRight:
			align[i] = "right"
		}
	}
	return &pipeline.Table{Rows: rows, Align: align}
}

// spans appends the text of n's inline children as styled spans, merging
// neighbours of the same style.
func (r *renderer) spans(n ast.Node, st pipeline.TextSpan, out *[]pipeline.TextSpan) {
	add := func(s string, st pipeline.TextSpan) {
		if s == "" {
			return
		}
		if k := len(*out) - 1; k >= 0 {
			last, cur := (*out)[k], st
			last.Text, cur.Text = "", ""
			if last == cur {
				(*out)[k].Text += s
				return
			}
		}
		st.Text = s
		*out = append(*out, st)
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := r.text(c.Segment)
			s := unescape(v)
			if c.IsRaw() {
				s = string(v)
			}
			if c.SoftLineBreak() || c.HardLineBreak() {
				s += " "
			}
			add(s, st)
		case *ast.String:
			if c.IsCode() || c.IsRaw() {
				add(string(c.Value), st)
			} else {
				add(unescape(c.Value), st)
			}
		case *ast.CodeSpan:
			code := st
			code.Code = true
			add(r.codeSpan(c), code)
		case *ast.Emphasis:
			inner := st
			if c.Level >= 2 {
				inner.Bold = true
			} else {
				inner.Italic = true
			}
			r.spans(c, inner, out)
		case *east.Strikethrough:
			inner := st
			inner.Strike = true
			r.spans(c, inner, out)
		case *ast.Link:
			inner := st
			inner.URL = string(c.Destination)
			r.spans(c, inner, out)
		case *ast.Image:
			inner := st
			inner.URL = string(c.Destination)
			r.spans(c, inner, out)
		case *ast.AutoLink:
			inner := st
			inner.URL = string(c.URL(r.src))
			if c.AutoLinkType == ast.AutoLinkEmail && !hasPrefixFold([]byte(inner.URL), "mailto:") {
				inner.URL = "mailto:" + inner.URL
			}
			add(string(c.Label(r.src)), inner)
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				add(strings.ReplaceAll(string(seg.Value(r.src)), "\n", " "), st)
			}
		case *tokenNode:
			v := string(c.seg.Value(r.src))
			m := st
			id, _, _ := strings.Cut(strings.Trim(v, "<>"), "|")
			switch {
			case strings.HasPrefix(id, "@U") || strings.HasPrefix(id, "@W"):
				m.User = id[1:]
			case strings.HasPrefix(id, "#C"):
				m.Channel = id[1:]
			}
			if m.User != "" || m.Channel != "" {
				*out = append(*out, pipeline.TextSpan{Text: v, User: m.User, Channel: m.Channel,
					Bold: st.Bold, Italic: st.Italic, Strike: st.Strike, Code: st.Code})
				continue
			}
			add(v, st)
		default:
			r.spans(c, st, out)
		}
	}
}

// trimCell trims the blanks at either end of a cell's text.
func trimCell(spans []pipeline.TextSpan) pipeline.TableCell {
	for len(spans) > 0 {
		spans[0].Text = strings.TrimLeft(spans[0].Text, " \t")
		if spans[0].Text != "" {
			break
		}
		spans = spans[1:]
	}
	for len(spans) > 0 {
		k := len(spans) - 1
		spans[k].Text = strings.TrimRight(spans[k].Text, " \t")
		if spans[k].Text != "" {
			break
		}
		spans = spans[:k]
	}
	return pipeline.TableCell(spans)
}
