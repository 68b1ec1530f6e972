package mrkdwn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func markdownTable(cols, rows int, cell string) string {
	line := func(f func(c int) string) string {
		var b strings.Builder
		b.WriteString("|")
		for c := range cols {
			b.WriteString(" " + f(c) + " |")
		}
		return b.String() + "\n"
	}
	s := line(func(c int) string { return fmt.Sprintf("h%d", c) }) + line(func(int) string { return "---" })
	for range rows {
		s += line(func(int) string { return cell })
	}
	return s
}

// A table within the platform's limits is native, one past any of them
// is not (the reply shows it as text, as Convert renders it).
func TestNativeTableLimits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cols, rows int // rows: the body, the header not counted
		cell       string
		native     bool
	}{
		{"20 columns", 20, 3, "x", true},
		{"21 columns", 21, 3, "x", false},
		{"100 rows with the header", 2, 99, "x", true},
		{"101 rows with the header", 2, 100, "x", false},
		{"10,000 characters", 2, 50, strings.Repeat("y", 99), true},
		{"past 10,000 characters", 2, 51, strings.Repeat("y", 99), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := NativeTable("Here:\n\n" + markdownTable(tc.cols, tc.rows, tc.cell))
			if got := tbl != nil; got != tc.native {
				t.Fatalf("native = %v, want %v", got, tc.native)
			}
			if tbl == nil {
				return
			}
			if len(tbl.Rows) != tc.rows+1 || len(tbl.Rows[0]) != tc.cols {
				t.Errorf("%d rows of %d cells, want %d of %d", len(tbl.Rows), len(tbl.Rows[0]), tc.rows+1, tc.cols)
			}
		})
	}
}

// The cells keep their style as spans; the text around the table is
// rendered as Convert renders it; a second table stays text; a short row
// is padded; no table, no native table.
func TestNativeTableCellsAndText(t *testing.T) {
	md := "The **status**:\n\n| service | state | link |\n|:---|:---:|---:|\n| `api` | **up** | [dash](https://d.example/a) |\n| worker | ~~down~~ _degraded_ |\n\n" +
		"After, a second:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
	tbl := NativeTable(md)
	if tbl == nil {
		t.Fatal("no native table")
	}
	if tbl.Before != "The *status*:" {
		t.Errorf("before = %q", tbl.Before)
	}
	if !strings.HasPrefix(tbl.After, "After, a second:\n\n```\na | b\n") {
		t.Errorf("after = %q", tbl.After)
	}
	if got := strings.Join(tbl.Align, ","); got != "left,center,right" {
		t.Errorf("align = %s", got)
	}
	want := [][]pipeline.TableCell{
		{{{Text: "service"}}, {{Text: "state"}}, {{Text: "link"}}},
		{{{Text: "api", Code: true}}, {{Text: "up", Bold: true}}, {{Text: "dash", URL: "https://d.example/a"}}},
		{{{Text: "worker"}}, {{Text: "down", Strike: true}, {Text: " "}, {Text: "degraded", Italic: true}}, nil},
	}
	if fmt.Sprint(tbl.Rows) != fmt.Sprint(want) {
		t.Errorf("rows:\n%v\nwant\n%v", tbl.Rows, want)
	}
	if !tbl.Rows[0][0].Plain() || tbl.Rows[1][1].Plain() || tbl.Rows[2][2].Text() != "" {
		t.Errorf("plain cells misread: %v", tbl.Rows)
	}
	for _, md := range []string{"", "no table | here", "- a list\n- of things"} {
		if tbl := NativeTable(md); tbl != nil {
			t.Errorf("NativeTable(%q) = %+v", md, tbl)
		}
	}
}
