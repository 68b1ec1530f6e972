package main

import (
	"encoding/json"
	"io"
	"text/tabwriter"
)

// How the operator commands print: with --json one JSON object a line,
// else a table with a header line.

// printJSON writes each record as one JSON object a line.
func printJSON[T any](w io.Writer, records []T) error {
	enc := json.NewEncoder(w)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// newTable is a table on w whose columns are separated by tabs in what is
// written to it; header is its first line. Flush prints it.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	io.WriteString(tw, header+"\n")
	return tw
}

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine is s on one line (line breaks and tabs as spaces), cut to n
// runes with an ellipsis.
func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
