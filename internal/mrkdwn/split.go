package mrkdwn

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxMessageLen is the part size to pass to Split for a message's text. The
// platform keeps chat.postMessage text to 4,000 characters and truncates
// silently past that; 3,900 bytes (never more characters than bytes) leaves
// room for a caller's "(2/3)" style marker.
const MaxMessageLen = 3900

// minLimit is the smallest useful limit: a part cut from a code block needs
// a reopened fence, a line break, one rune, a line break and a closing fence
// ("```\n" + 4 + "\n```" = 12 bytes), with some room to spare.
const minLimit = 16

const fenceMark = "```"

// Split cuts text (typically Convert's output) into parts of at most limit
// bytes, in order. It cuts at line boundaries, preferring a blank line in the
// second half of a part and the start of a code block over the middle of
// one. A code block that must be cut is closed at the end of one part and
// reopened, with the same quote prefix, at the start of the next. A line
// longer than a part is cut at a rune boundary, at whitespace if there is
// any. Parts never start with blank lines or end with whitespace, and none is
// blank; blank text gives no parts. A code block left open at the end is
// closed. A limit below 16 is taken as 16.
func Split(text string, limit int) []string {
	s := splitter{limit: max(limit, minLimit)}
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		s.todo = append(s.todo, lines[i])
	}
	for len(s.todo) > 0 {
		p := s.todo[len(s.todo)-1]
		s.todo = s.todo[:len(s.todo)-1]
		s.add(p)
	}
	s.flush()
	return s.parts
}

// entry is a line in the part being built, with the fence state after it.
type entry struct {
	s      string
	inCode bool
	prefix string
}

type splitter struct {
	limit int
	parts []string
	todo  []string // stack of lines to place, next last

	buf    []entry // the part being built
	size   int     // bytes of buf joined with "\n"
	inCode bool    // inside a code block after buf
	prefix string  // quote prefix of that code block's fence
}

// add appends line l to the current part, starting a new part or cutting l
// when it does not fit. Lines cut from a long line are read like any other:
// the platform sees them as lines too.
func (s *splitter) add(l string) {
	if len(s.buf) == 0 && isBlank(l) {
		return
	}
	// A line longer than a part cannot fit: skip reading it, which would
	// make cutting a huge line quadratic.
	if len(l) <= s.limit {
		if inCode, prefix := s.after(l); s.fits(len(l), inCode, prefix) {
			s.push(entry{l, inCode, prefix})
			return
		}
	}
	if s.hasContent() {
		s.todo = append(s.todo, l) // under any lines breakPart puts back
		s.breakPart()
		return
	}
	s.cut(l)
}

// after returns the fence state after line l: a line that starts with ```
// (after any quote or indentation prefix) and holds an odd number of them
// opens or closes a code block.
func (s *splitter) after(l string) (bool, string) {
	prefix, ok := fencePrefix(l)
	if !ok || strings.Count(l[len(prefix):], fenceMark)%2 == 0 {
		return s.inCode, s.prefix
	}
	if s.inCode {
		return false, ""
	}
	if !s.repeatable(prefix) {
		prefix = ""
	}
	return true, prefix
}

// repeatable reports whether a fence prefix is short enough to close and
// reopen a code block in a part and still fit a rune between the fences.
func (s *splitter) repeatable(prefix string) bool {
	return 2*(len(prefix)+len(fenceMark))+2+utf8.UTFMax <= s.limit
}

// fencePrefix returns the quote and indentation prefix of a line that starts
// a fence once the prefix is skipped.
func fencePrefix(l string) (string, bool) {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '>') {
		i++
	}
	return l[:i], strings.HasPrefix(l[i:], fenceMark)
}

// fits reports whether n more bytes fit, leaving room for a closing fence if
// the part would end inside a code block.
func (s *splitter) fits(n int, inCode bool, prefix string) bool {
	if len(s.buf) > 0 {
		n++
	}
	if inCode {
		n += 1 + len(prefix) + len(fenceMark)
	}
	return s.size+n <= s.limit
}

func (s *splitter) push(e entry) {
	if len(s.buf) > 0 {
		s.size++
	}
	s.size += len(e.s)
	s.buf = append(s.buf, e)
	s.inCode, s.prefix = e.inCode, e.prefix
}

// isBlank reports whether l holds only whitespace.
func isBlank(l string) bool {
	return strings.TrimLeftFunc(l, unicode.IsSpace) == ""
}

// hasContent reports whether the part holds more than a bare fence opening
// a code block: ending the part there would leave an empty block.
func (s *splitter) hasContent() bool {
	if len(s.buf) != 1 {
		return len(s.buf) > 1
	}
	e := s.buf[0]
	return !e.inCode || e.s != e.prefix+fenceMark
}

// breakPart ends the current part because the next piece does not fit. If a
// better place to cut lies behind, the lines after it go back on the stack.
func (s *splitter) breakPart() {
	at := -1
	if s.inCode {
		// Start the code block in the next part rather than cut it.
		for i := len(s.buf) - 1; i > 0; i-- {
			if !s.buf[i-1].inCode {
				at = i
				break
			}
		}
	} else {
		// Cut at a blank line, if that leaves this part at least half full.
		size := s.size
		for i := len(s.buf) - 1; i > 0 && size > s.limit/2; i-- {
			size -= len(s.buf[i].s) + 1
			if strings.TrimSpace(s.buf[i].s) == "" && !s.buf[i].inCode && size >= s.limit/2 {
				at = i
				break
			}
		}
	}
	if at < 0 {
		s.flush()
		return
	}
	for i := len(s.buf) - 1; i >= at; i-- {
		s.todo = append(s.todo, s.buf[i].s)
	}
	s.buf = s.buf[:at]
	last := s.buf[at-1]
	s.inCode, s.prefix = last.inCode, last.prefix
	s.flush()
}

// flush emits the current part, closing an open code block, and starts the
// next one, reopening the block.
func (s *splitter) flush() {
	if len(s.buf) == 0 {
		return
	}
	lines := make([]string, len(s.buf), len(s.buf)+1)
	for i, e := range s.buf {
		lines[i] = e.s
	}
	if s.inCode {
		lines = append(lines, s.prefix+fenceMark)
	}
	// Outside code, trailing whitespace is not content; inside, the part
	// ends with the closing fence.
	if part := strings.TrimRightFunc(strings.Join(lines, "\n"), unicode.IsSpace); part != "" {
		s.parts = append(s.parts, part)
	}
	s.buf, s.size = s.buf[:0], 0
	if s.inCode {
		s.push(entry{s.prefix + fenceMark, true, s.prefix})
	}
}

// cut splits a line too long for an empty part: the head that fits goes in
// this part, the rest back on the stack.
func (s *splitter) cut(l string) {
	// Room for the head, keeping room for a closing fence in case the head
	// ends inside a code block. minLimit and repeatable keep this at
	// utf8.UTFMax or more.
	room := s.limit - s.size
	if len(s.buf) > 0 {
		room--
	}
	if s.inCode {
		room -= 1 + len(s.prefix) + len(fenceMark)
	} else if lead, ok := fencePrefix(l[:min(len(l), s.limit)]); ok || len(lead) == s.limit {
		// The head may open a code block (a prefix as long as the part
		// cannot be told apart: assume it might).
		if !s.repeatable(lead) {
			lead = ""
		}
		room -= 1 + len(lead) + len(fenceMark)
	}
	i := cutPoint(l, room)
	head, rest := l[:i], l[i:]
	inCode, pfx := s.after(head)
	if !s.inCode && !inCode {
		// Outside code the whitespace at the cut can go.
		head, rest = strings.TrimRight(head, " \t"), strings.TrimLeft(rest, " \t")
	}
	if rest != "" {
		s.todo = append(s.todo, rest)
	}
	if head != "" {
		s.push(entry{head, inCode, pfx})
	}
}

// cutPoint returns where to cut l so that l[:i] is at most n bytes: after
// the last space or tab in the second half of that window, else at a rune
// boundary, never inside a run of backticks, and never at 0.
func cutPoint(l string, n int) int {
	if n >= len(l) {
		return len(l)
	}
	n = max(n, 1) // callers keep n >= utf8.UTFMax; never return 0
	i := n
	for i > 0 && !utf8.RuneStart(l[i]) {
		i--
	}
	if i == 0 {
		i = n // not UTF-8: any byte will do
	}
	if j := strings.LastIndexAny(l[:i], " \t"); j >= i/2 && strings.TrimSpace(l[:j]) != "" {
		return j + 1
	}
	if l[i] == '`' {
		j := i
		for j > 0 && l[j-1] == '`' {
			j--
		}
		if j > 0 {
			i = j
		}
	}
	return i
}
