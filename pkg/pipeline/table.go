package pipeline

// The platform's limits of a native table (a table block): at most 20
// columns and 100 rows (the header counted), at most 10,000 characters of
// cell text in a message; one table a message.
const (
	MaxTableColumns = 20
	MaxTableRows    = 100
	MaxTableChars   = 10000
)

// Table is a reply's markdown table shown natively: Before and After are
// the rest of the reply around it, in the platform's dialect (another
// table among them stays as text); Rows the cells, the header first.
type Table struct {
	Before, After string
	Rows          [][]TableCell
	// Align is each column's alignment: "left", "center", "right" or ""
	// (none given).
	Align []string
}

// TableCell is one cell: its text as spans (plain when it has one span
// without style).
type TableCell []TextSpan

// TextSpan is a run of a cell's text with one style; URL makes it a link,
// User or Channel a mention of that id (Text is the mention as typed).
type TextSpan struct {
	Text                       string
	URL                        string
	User, Channel              string
	Bold, Italic, Strike, Code bool
}

// Plain reports whether the cell is text without style.
func (c TableCell) Plain() bool {
	return len(c) == 0 || len(c) == 1 && c[0] == TextSpan{Text: c[0].Text}
}

// Text is the cell's text without its style.
func (c TableCell) Text() string {
	s := ""
	for _, sp := range c {
		s += sp.Text
	}
	return s
}
