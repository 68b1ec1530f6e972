package mrkdwn

import (
	"bytes"
	"strings"
	"unicode/utf8"

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
	aligned := alignedRows(rows, header, widths, t.Alignments)
	if size := r.sourceSize(t); size > 0 && utf8.RuneCountInString(aligned) > 2*size {
		// One wide cell pads every row of its column: past twice the
		// table's own text, the padding is not worth its room.
		return fence(plainRows(rows, header))
	}
	return fence(aligned)
}

// alignedRows writes rows padded to widths, with a rule under the header.
func alignedRows(rows [][]string, header int, widths []int, aligns []east.Alignment) string {
	var b strings.Builder
	for i, row := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.TrimRight(formatRow(trimRow(row), widths, aligns), " "))
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
	return b.String()
}

// plainRows writes rows unpadded, " | " between cells ("|" beside an
// empty one), with a short rule under the header.
func plainRows(rows [][]string, header int) string {
	var b strings.Builder
	for i, row := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		for j, c := range trimRow(row) {
			if j > 0 {
				if row[j-1] != "" {
					b.WriteByte(' ')
				}
				b.WriteByte('|')
				if c != "" {
					b.WriteByte(' ')
				}
			}
			b.WriteString(c)
		}
		if i == header {
			b.WriteString("\n---")
		}
	}
	return b.String()
}

// trimRow drops a row's empty cells at its end: they would only add
// separators and padding.
func trimRow(row []string) []string {
	for len(row) > 0 && row[len(row)-1] == "" {
		row = row[:len(row)-1]
	}
	return row
}

// sourceSize returns how many characters the table takes in the markdown,
// from its header row to the end of its last row, or 0 if unknown.
func (r *renderer) sourceSize(t *east.Table) int {
	first, last := t.FirstChild(), t.LastChild()
	if first == nil || last == nil {
		return 0
	}
	start, end := first.Pos(), last.Pos()
	if start < 0 || end < start || end > len(r.src) {
		return 0
	}
	if i := bytes.IndexByte(r.src[end:], '\n'); i >= 0 {
		end += i
	} else {
		end = len(r.src)
	}
	return utf8.RuneCount(r.src[start:end])
}

// cell renders a table cell as plain text: markup would show literally
// inside the code block, and so would escapes.
func (r *renderer) cell(n ast.Node) string {
	s := r.inlines(n, style{plain: true, raw: true, oneLine: true})
	return strings.TrimSpace(strings.ReplaceAll(s, "\t", " "))
}

func formatRow(row []string, widths []int, aligns []east.Alignment) string {
	var b strings.Builder
	for i, c := range row {
		if i > 0 {
			b.WriteString(" | ")
		}
		w := widths[i]
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
