package mrkdwn

import (
	"strings"

	"github.com/clipperhouse/displaywidth"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

// table renders a GFM table as aligned monospace text in a code block:
// mrkdwn has no tables, and only a code block keeps columns lined up.
// Widths are display widths (a CJK character or most emoji take two
// columns), so wide cells line up in a monospace font too.
//
//	Name  | Qty
//	------+----
//	Apple |   3
func (r *renderer) table(t *east.Table) []line {
	var rows [][]string
	header := -1
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		if _, ok := row.(*east.TableHeader); ok && header < 0 {
			header = len(rows)
		}
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, r.cell(cell))
		}
		rows = append(rows, cells)
	}
	cols := len(t.Alignments)
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	if cols == 0 {
		return nil
	}
	widths := make([]int, cols)
	for i := range widths {
		widths[i] = 1
	}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], displaywidth.String(c))
		}
	}
	var b strings.Builder
	for i, row := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.TrimRight(formatRow(row, widths, t.Alignments), " "))
		if i == header {
			b.WriteByte('\n')
			for j, w := range widths {
				if j > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", w))
			}
		}
	}
	return fence(b.String())
}

// cell renders a table cell as plain text: markup would show literally
// inside the code block, and so would escapes.
func (r *renderer) cell(n ast.Node) string {
	s := r.inlines(n, style{plain: true, raw: true, oneLine: true})
	return strings.TrimSpace(strings.ReplaceAll(s, "\t", " "))
}

func formatRow(row []string, widths []int, aligns []east.Alignment) string {
	var b strings.Builder
	for i, w := range widths {
		if i > 0 {
			b.WriteString(" | ")
		}
		c := ""
		if i < len(row) {
			c = row[i]
		}
		pad := max(w-displaywidth.String(c), 0)
		align := east.AlignNone
		if i < len(aligns) {
			align = aligns[i]
		}
		switch align {
		case east.AlignRight:
			b.WriteString(strings.Repeat(" ", pad) + c)
		case east.AlignCenter:
			b.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
		default:
			b.WriteString(c + strings.Repeat(" ", pad))
		}
	}
	return b.String()
}
