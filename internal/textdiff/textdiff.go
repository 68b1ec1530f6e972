// Package textdiff renders the difference of two texts as a unified diff,
// line by line, the way `diff -u` shows it: what a reviewer reads when a
// golden file no longer matches.
package textdiff

import (
	"fmt"
	"strings"
)

// context is how many unchanged lines surround each change.
const context = 3

// Unified returns the unified diff turning old into new, with the headers
// ---/+++ naming them and @@ hunks of three lines of context; "" when the
// texts are equal.
func Unified(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	a, b := lines(old), lines(new)
	ops := diff(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	// Group the edit script into hunks: runs of changes with at most
	// 2*context equal lines between them.
	for i := 0; i < len(ops); {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		writeHunk(&out, ops, start, end)
		i = end
	}
	return out.String()
}

// Whole returns the unified diff turning old into new with every line of
// both shown, as one hunk: unchanged lines are context, however far from
// a change; "" when the texts are equal. It is for short texts a person
// reviews whole (an edit's old and new strings).
func Whole(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	ops := diff(lines(old), lines(new))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	if len(ops) > 0 {
		writeHunk(&out, ops, 0, len(ops))
	}
	return out.String()
}

type op struct {
	kind byte // ' ', '-', '+'
	text string
	ai   int // line index in a (for ' ' and '-')
	bi   int // line index in b (for ' ' and '+')
}

func writeHunk(out *strings.Builder, ops []op, start, end int) {
	aStart, bStart, aLen, bLen := -1, -1, 0, 0
	for _, o := range ops[start:end] {
		if o.kind != '+' {
			if aStart < 0 {
				aStart = o.ai
			}
			aLen++
		}
		if o.kind != '-' {
			if bStart < 0 {
				bStart = o.bi
			}
			bLen++
		}
	}
	if aStart < 0 {
		aStart = ops[start].ai
	}
	if bStart < 0 {
		bStart = ops[start].bi
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", span(aStart, aLen), span(bStart, bLen))
	for _, o := range ops[start:end] {
		out.WriteByte(o.kind)
		out.WriteString(o.text)
		out.WriteByte('\n')
	}
}

// span is a hunk's range as diff -u writes it: "start,len", 1-based; an
// empty range names the line before it.
func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// lines splits text into lines; a final newline ends the last line.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// maxCells bounds the quadratic table of diff (4 bytes a cell: 16 MiB):
// past it, two texts of thousands of lines each, the script removes every
// line of a and adds every line of b, which is still a true diff.
const maxCells = 4 << 20

// diff is the edit script of a longest common subsequence of a and b.
// Golden transcripts are short (tens to hundreds of lines): the quadratic
// table is fine there.
func diff(a, b []string) []op {
	n, m := len(a), len(b)
	if (n+1)*(m+1) > maxCells {
		ops := make([]op, 0, n+m)
		for i, l := range a {
			ops = append(ops, op{'-', l, i, 0})
		}
		for j, l := range b {
			ops = append(ops, op{'+', l, n, j})
		}
		return ops
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i], i, j}) // deletions first, as diff -u
			i++
		default:
			ops = append(ops, op{'+', b[j], i, j})
			j++
		}
	}
	return ops
}
