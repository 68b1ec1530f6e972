package mrkdwn

import (
	"bytes"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// emphasisParser reads '*' and '_' runs as CommonMark does, forgiving the
// markup a model writes sloppily so that a message shows what its writer
// meant instead of raw asterisks, and refusing the runs that are plainly
// not markup:
//
//   - "** spaced bold **": a '*' run with a blank on its inner side (and a
//     blank or a bracket or stop on its outer side) may open and close,
//     with a run of the same length on the same line; "a * em * b" too,
//     when what the single stars hold reads as words (see wordish). Next to
//     a number or a bracket it stays an operator: "2 * 3 * 4", "2 ** 10".
//   - "**Note:**text", "__Note:__text": a run of two or more between a
//     phrase's closing punctuation and a letter may close (and, mirrored,
//     open), which CommonMark forbids.
//   - "*.go", "src/**/*.go", "__init__.py": a run next to '/' or before a
//     file extension is a glob or a file name, never emphasis.
//
// What is left of a run after pairing is decided in strays. It is ahead of
// goldmark's own emphasis parser (500), which then never sees '*' or '_'.
type emphasisParser struct{}

var _ parser.InlineParser = emphasisParser{}

// delimsKey holds the parse's *[]*parser.Delimiter of '*' and '_' runs.
var delimsKey = parser.NewContextKey()

// Trigger implements parser.InlineParser.
func (emphasisParser) Trigger() []byte { return []byte{'*', '_'} }

// Parse implements parser.InlineParser.
func (emphasisParser) Parse(_ ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, seg := block.PeekLine()
	run := &delimRun{src: block.Source(), start: seg.Start}
	d := parser.ScanDelimiter(line, before, 1, run)
	if d == nil {
		return nil
	}
	n := d.OriginalLength
	run.stop = seg.Start + n
	after := rune('\n')
	if n < len(line) {
		after, _ = utf8.DecodeRune(line[n:])
	}
	run.line, _ = block.Position()
	run.measure(line[n:])
	run.relax(d, before, after, line[n:])
	d.Segment = seg.WithStop(run.stop)
	block.Advance(n)
	pc.PushDelimiter(d)
	runs, _ := pc.ComputeIfAbsent(delimsKey, func() any { return new([]*parser.Delimiter) }).(*[]*parser.Delimiter)
	*runs = append(*runs, d)
	return d
}

// delimRun is the processor of one run: it carries what pairing needs to
// know about the run beyond goldmark's Delimiter.
type delimRun struct {
	src         []byte
	start, stop int  // the run's bytes in src
	free        bool // whitespace (or a line's end) on both sides
	operand     bool // free, but a number is its neighbour: an operator
	sloppy      bool // pairs by the forgiving rules

	// What follows the run on its line, measured once so that pairing,
	// which may try every earlier run, costs no more than goldmark's own:
	line       int  // its line in the block
	solid      int  // where the first non-blank after it is
	wordsEnd   int  // where the words after it end (see wordish)
	twoLetters int  // where the second letter after it ends, if in them
	starAhead  bool // a star follows it on its line
}

// IsDelimiter implements parser.DelimiterProcessor.
func (*delimRun) IsDelimiter(b byte) bool { return b == '*' || b == '_' }

// OnMatch implements parser.DelimiterProcessor.
func (*delimRun) OnMatch(consumes int) ast.Node { return ast.NewEmphasis(consumes) }

// CanOpenCloser implements parser.DelimiterProcessor. Goldmark calls it on
// the opener's processor.
func (*delimRun) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	if opener.Char != closer.Char {
		return false
	}
	o, ok1 := opener.Processor.(*delimRun)
	c, ok2 := closer.Processor.(*delimRun)
	if !ok1 || !ok2 || !(o.sloppy || c.sloppy) {
		return true
	}
	if o.stop > c.start || opener.OriginalLength != closer.OriginalLength {
		// Forgiven runs pair only with their like: "** a **", not
		// "*** a **".
		return false
	}
	if o.line != c.line {
		// Forgiven markup stays on its line: across lines, stray stars
		// would pair with anything.
		return false
	}
	if opener.OriginalLength == 1 {
		// Single stars hold words.
		return c.start <= o.wordsEnd && o.twoLetters <= c.start
	}
	return o.solid < c.start
}

// canPair reports whether a forgiven run of n stars could find a closer
// later on its line: a star after it, or for a single star, another right
// after the words it holds.
func (r *delimRun) canPair(n int) bool {
	if n == 1 {
		end := r.wordsEnd
		return end < len(r.src) && r.src[end] == '*' && (end+1 == len(r.src) || r.src[end+1] != '*') &&
			r.twoLetters <= end
	}
	return r.starAhead
}

// measure records where, in rest (the line after the run), the first
// non-blank is and where the words end. It stops at the first character
// that is not part of words, at the latest the next run, so measuring every
// run of a line reads it about once.
func (r *delimRun) measure(rest []byte) {
	r.solid, r.wordsEnd, r.twoLetters = -1, r.stop, math.MaxInt
	letters := 0
	for i := 0; i < len(rest); {
		c, n := utf8.DecodeRune(rest[i:])
		if r.solid < 0 && c != ' ' && c != '\t' {
			r.solid = r.stop + i
		}
		if !wordish(c) {
			break
		}
		i += n
		r.wordsEnd = r.stop + i
		if unicode.IsLetter(c) {
			if letters++; letters == 2 {
				r.twoLetters = r.stop + i
			}
		}
	}
	if r.solid < 0 {
		r.solid = math.MaxInt
	}
	if r.src[r.start] == '*' {
		// Up to the next star, which starts the next run: read once too.
		r.starAhead = bytes.IndexByte(rest[r.wordsEnd-r.stop:], '*') >= 0
	}
}

// relax adjusts the flags ScanDelimiter gave d by the rules above; rest is
// the line after the run.
func (r *delimRun) relax(d *parser.Delimiter, before, after rune, rest []byte) {
	if before == '/' || after == '/' || after == '.' && len(rest) > 1 && isExtension(rest[1]) {
		d.CanOpen, d.CanClose = false, false
		return
	}
	bSpace, aSpace := util.IsSpaceRune(before), util.IsSpaceRune(after)
	if d.Char == '*' && (bSpace || opensPhrase(before)) && (aSpace || closesPhrase(after)) {
		r.free = bSpace && aSpace
		// Across a blank, a number or a bracket makes it arithmetic;
		// a bracket touching it is the phrase's.
		r.operand = bSpace && isOperand(lastBefore(r.src, r.start)) || aSpace && isOperand(firstAfter(rest))
		if r.operand {
			return
		}
		// Blank on one side, a phrase's bracket or stop on the other:
		// "(** bold**)", "**bold **.".
		r.sloppy = true
		d.CanOpen = d.CanOpen || aSpace
		d.CanClose = d.CanClose || bSpace
		if !r.canPair(d.OriginalLength) {
			// No closer for it on this line: leaving it out of the
			// openers keeps pairing linear where stars abound.
			d.CanOpen = false
		}
		return
	}
	if d.OriginalLength < 2 || bSpace || aSpace {
		return
	}
	if closesPhrase(before) && isWord(after) {
		r.sloppy, d.CanClose = true, true
	}
	if isWord(before) && opensPhrase(after) {
		r.sloppy, d.CanOpen = true, true
	}
}

// strays returns the bytes of src to leave out of the message: what is left
// of a run after pairing when part of it paired ("***bold**" is bold, not a
// star and bold), and a free-standing run of two or more stars that paired
// with nothing ("Done ***"), with the blanks after it. Runs that touch a
// word ("**kwargs"), stand for an operator ("2 ** 10") or are underscores
// stay as written. The result is sorted.
func strays(pc parser.Context) []text.Segment {
	runs, _ := pc.Get(delimsKey).(*[]*parser.Delimiter)
	if runs == nil {
		return nil
	}
	var out []text.Segment
	for _, d := range *runs {
		r, _ := d.Processor.(*delimRun)
		switch {
		case r == nil || d.Length == 0:
		case d.Length < d.OriginalLength:
			out = append(out, d.Segment)
		case d.Char == '*' && d.OriginalLength >= 2 && r.free && !r.operand:
			stop := r.stop
			for stop < len(r.src) && (r.src[stop] == ' ' || r.src[stop] == '\t') {
				stop++
			}
			out = append(out, text.NewSegment(r.start, stop))
		}
	}
	slices.SortFunc(out, func(a, b text.Segment) int { return a.Start - b.Start })
	return out
}

// wordish: what single stars with a blank on each side may hold to read as
// emphasised words rather than a factor: letters (at least two, counted in
// measure) and blanks, apostrophes, hyphens and commas, no digits. "a * em
// * b" is emphasis; "x * y * z" and "a * (b) * c" are not.
func wordish(r rune) bool {
	return unicode.IsLetter(r) || r == ' ' || r == '\t' || r == '\'' || r == '’' || r == '-' || r == ','
}

// lastBefore returns the last rune before src[i] on its line that is not
// a blank, or '\n'.
func lastBefore(src []byte, i int) rune {
	for i > 0 {
		r, n := utf8.DecodeLastRune(src[:i])
		if r != ' ' && r != '\t' {
			return r
		}
		i -= n
	}
	return '\n'
}

// firstAfter returns the first rune of b that is not a blank, or '\n'.
func firstAfter(b []byte) rune {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != ' ' && r != '\t' {
			return r
		}
		b = b[n:]
	}
	return '\n'
}

// isOperand: a number or a bracket a blank away from a star makes it
// arithmetic.
func isOperand(r rune) bool {
	return unicode.IsDigit(r) || r == '(' || r == ')' || r == '[' || r == ']'
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// isExtension: ".go", ".py", ".tar": a file extension starts lower case or
// with a digit; a sentence after a full stop starts upper case.
func isExtension(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) }

func closesPhrase(r rune) bool {
	switch r {
	case '.', ',', ':', ';', '!', '?', ')', ']', '"', '\'', '’', '”', '…':
		return true
	}
	return false
}

func opensPhrase(r rune) bool {
	switch r {
	case '(', '[', '"', '\'', '‘', '“':
		return true
	}
	return false
}
