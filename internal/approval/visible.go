package approval

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// How a card writes what a person could miss or misread, so that what it
// shows is exactly one call. The notation is unambiguous: none of its
// markers can come from the call itself, because every character the
// notation uses is escaped when the call holds it literally.
//
//   - `␠×N` is a run of N spaces (N ≥ spaceRun, or longer than
//     indentMax at the start of a line).
//   - `␉` is a tab; `␉×N` a run of N ≥ spaceRun tabs.
//   - A digit or `×` right after a count, and a `×` right after `␉`, is
//     escaped, so a count ends where it seems to.
//   - `␤×N` (followed by one line break) is a run of N ≥ newlineRun line
//     breaks.
//   - `\uXXXX` (UTF-16, as JSON writes it) is any other character that is
//     invisible, moves text around or may not show: control characters
//     (so ANSI escapes: `\u001b[31m`), zero-width and bidirectional
//     controls (`\u200d`, `\u202e`), spaces other than ASCII's, the
//     symbols used by this notation (`␠` is `\u2420`), and the third
//     backtick of every three (a code block cannot be closed from inside).
//   - A literal backslash is doubled when a `u` or an escape follows it,
//     so `\\u202e` is the six characters `\u202e` typed, and `\u202e`
//     the one character. Other backslashes (`\n`, `\.`) are shown as is.
//
// In JSON mode the text is JSON, whose strings already escape every
// backslash: no backslash is doubled there, and every `\u` is JSON's own.
const (
	// spaceRun is the shortest run of spaces or tabs written with a
	// count: shorter runs cannot push anything out of sight.
	spaceRun = 8
	// indentMax is how many spaces may start a line as they are
	// (indentation, in a file's content or a diff).
	indentMax = 32
	// newlineRun is the shortest run of line breaks written with a
	// count: it keeps up to two blank lines, as source files have.
	newlineRun = 4
)

const (
	markSpace   = '␠' // U+2420 SYMBOL FOR SPACE
	markTab     = '␉' // U+2409 SYMBOL FOR HORIZONTAL TABULATION
	markNewline = '␤' // U+2424 SYMBOL FOR NEWLINE
	markTimes   = '×'
)

// What visible wrote last, for the character that follows.
const (
	afterCount = 1 + iota // a run's count: a digit or × next is escaped
	afterTab              // a ␉: a × next is escaped
)

// visMode says how a text is read.
type visMode uint8

const (
	modeText   visMode = iota // a command, a file's content
	modeDiff                  // a unified diff: a line's indentation starts after its +, - or space
	modeJSON                  // JSON written by encoding/json
	modeInline                // one line inside inline code: line breaks and every backtick escaped
)

// notation records which parts of the notation a rendering used, so that
// the card explains only those.
type notation struct {
	spaces, tabs, newlines, escapes, backslashes bool
}

func (n *notation) add(o notation) {
	n.spaces = n.spaces || o.spaces
	n.tabs = n.tabs || o.tabs
	n.newlines = n.newlines || o.newlines
	n.escapes = n.escapes || o.escapes
	n.backslashes = n.backslashes || o.backslashes
}

// legend explains the notation n used, in mrkdwn; "" when none.
func (n notation) legend() string {
	var parts []string
	if n.spaces {
		parts = append(parts, "`␠×N` N spaces")
	}
	if n.tabs {
		parts = append(parts, "`␉` a tab")
	}
	if n.newlines {
		parts = append(parts, "`␤×N` N line breaks")
	}
	if n.escapes {
		parts = append(parts, "`\\uXXXX` the character U+XXXX, as JSON writes it (invisible, control or look-alike)")
	}
	if n.backslashes {
		parts = append(parts, "`\\\\u` a typed `\\u`")
	}
	if len(parts) == 0 {
		return ""
	}
	return "_Made visible:_ " + strings.Join(parts, " · ")
}

// Visible writes s in the card's notation (see above), as text.
func Visible(s string) string {
	out, _ := visible(s, modeText)
	return out
}

// visible writes s in the card's notation and says which parts it used.
func visible(s string, mode visMode) (string, notation) {
	var (
		b         strings.Builder
		used      notation
		lineStart = true
		// afterRun is what was written last: afterCount (a digit or ×
		// next is escaped), afterTab (a × next is escaped) or 0.
		afterRun int
	)
	b.Grow(len(s))
	escape := func(r rune) {
		used.escapes = true
		writeEscape(&b, r)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Not UTF-8: what runs would read U+FFFD; show that it is
			// there.
			escape(utf8.RuneError)
			i++
			lineStart, afterRun = false, 0
			continue
		}
		prev := afterRun
		afterRun = 0
		switch {
		case r == ' ':
			n := run(s[i:], ' ')
			if n >= spaceRun && !(lineStart && n <= indentMax) {
				used.spaces = true
				b.WriteRune(markSpace)
				b.WriteRune(markTimes)
				b.WriteString(strconv.Itoa(n))
				afterRun = afterCount
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			lineStart = false
			continue
		case r == '\t' && mode != modeJSON:
			n := run(s[i:], '\t')
			used.tabs = true
			if n >= spaceRun {
				b.WriteRune(markTab)
				b.WriteRune(markTimes)
				b.WriteString(strconv.Itoa(n))
				afterRun = afterCount
			} else {
				b.WriteString(strings.Repeat(string(markTab), n))
				afterRun = afterTab
			}
			i += n
			lineStart = false
			continue
		case r == '\n' && (mode == modeText || mode == modeDiff):
			n := run(s[i:], '\n')
			if n >= newlineRun {
				used.newlines = true
				b.WriteRune(markNewline)
				b.WriteRune(markTimes)
				b.WriteString(strconv.Itoa(n))
				b.WriteByte('\n')
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			lineStart = true
			continue
		case r == '`':
			n := run(s[i:], '`')
			for k := range n {
				if mode == modeInline || k%3 == 2 {
					escape('`')
				} else {
					b.WriteByte('`')
				}
			}
			i += n
			lineStart = false
			continue
		case r == '\\' && mode != modeJSON:
			n := run(s[i:], '\\')
			next, _ := utf8.DecodeRuneInString(s[i+n:])
			written := n
			if i+n < len(s) && (next == 'u' || mustEscape(next, mode) || (mode == modeInline && next == '`')) {
				used.backslashes = true
				written = 2 * n
			}
			b.WriteString(strings.Repeat(`\`, written))
			i += n
			lineStart = false
			continue
		case prev != 0 && r == markTimes, prev == afterCount && '0' <= r && r <= '9':
			escape(r)
		case mustEscape(r, mode):
			escape(r)
		default:
			b.WriteRune(r)
		}
		i += size
		// A diff line's + or - comes before its indentation.
		lineStart = lineStart && mode == modeDiff && (r == '+' || r == '-')
	}
	return b.String(), used
}

// run is how many times r (ASCII) repeats at the start of s.
func run(s string, r byte) int {
	n := 0
	for n < len(s) && s[n] == r {
		n++
	}
	return n
}

// mustEscape reports whether r is written \uXXXX wherever it is.
func mustEscape(r rune, mode visMode) bool {
	switch {
	case r == '\n':
		return mode == modeInline // modeText keeps line breaks; JSON has none raw
	case r == '\t':
		return mode == modeJSON // JSON has none raw; elsewhere ␉
	case r < 0x20 || (0x7f <= r && r < 0xa0):
		return true // C0 and C1 controls, DEL: ESC starts ANSI sequences
	case r == ' ':
		return false
	case !unicode.IsPrint(r):
		// Format characters (zero-width, bidirectional, tags, soft
		// hyphen), non-ASCII spaces, line and paragraph separators,
		// private use, surrogates, unassigned.
		return true
	case 0x2400 <= r && r <= 0x2426:
		return true // control pictures: the notation's own symbols and their look-alikes
	case unicode.Is(invisibleGraphic, r):
		return true
	}
	return false
}

// invisibleGraphic are characters Unicode calls graphic that show nothing
// or nearly nothing: fillers, blanks, joiners and selectors.
var invisibleGraphic = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x034f, Hi: 0x034f, Stride: 1}, // combining grapheme joiner
		{Lo: 0x115f, Hi: 0x1160, Stride: 1}, // Hangul choseong/jungseong fillers
		{Lo: 0x17b4, Hi: 0x17b5, Stride: 1}, // Khmer inherent vowels
		{Lo: 0x180b, Hi: 0x180f, Stride: 1}, // Mongolian variation selectors
		{Lo: 0x2800, Hi: 0x2800, Stride: 1}, // braille blank
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // Hangul filler
		{Lo: 0xfe00, Hi: 0xfe0f, Stride: 1}, // variation selectors
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1}, // halfwidth Hangul filler
		{Lo: 0xfffc, Hi: 0xfffd, Stride: 1}, // object and replacement characters
	},
	R32: []unicode.Range32{
		{Lo: 0xe0100, Hi: 0xe01ef, Stride: 1}, // variation selectors supplement
	},
}

// writeEscape writes r as \uXXXX, as a UTF-16 surrogate pair past U+FFFF.
func writeEscape(b *strings.Builder, r rune) {
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}
