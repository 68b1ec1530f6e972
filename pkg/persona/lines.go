package persona

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// srcLine is one line of SOUL.md after comment removal.
type srcLine struct {
	n    int    // 1-based line number in the file
	text string // without line terminator; comments removed
	// fenced is true inside a fenced code block, where nothing is parsed.
	fenced bool
}

// splitLines normalises the source and splits it into lines: a leading BOM
// is dropped, invalid UTF-8 becomes U+FFFD (so that the JSON form round-trips
// exactly), CRLF and lone CR end lines, and HTML comments outside fenced code
// are removed. A line that held only a comment is dropped, so a comment never
// adds a blank line to free text. unterminated is the line of a "<!--" that
// is never closed (0 when all are closed); it runs to the end of the file.
func splitLines(src []byte) (lines []srcLine, invalidUTF8 bool, unterminated int) {
	s := string(src)
	if !utf8.ValidString(s) {
		invalidUTF8 = true
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")

	var (
		inComment bool
		fence     string // the opening fence marker while inside one
	)
	for i, raw := range strings.Split(s, "\n") {
		n := i + 1
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(raw), fence) {
				fence = ""
			}
			lines = append(lines, srcLine{n: n, text: raw, fenced: true})
			continue
		}
		text := raw
		if inComment || strings.Contains(raw, "<!--") {
			var openedHere bool
			startedInside := inComment
			text, inComment, openedHere = stripComments(raw, inComment)
			if startedInside {
				// What follows "-->" starts the line's own text.
				text = strings.TrimLeft(text, " \t")
			}
			switch {
			case !inComment:
				unterminated = 0
			case openedHere:
				unterminated = n
			}
			if strings.TrimSpace(text) == "" {
				continue // the line was only comment
			}
		}
		if f := fenceMarker(text); f != "" {
			fence = f
			lines = append(lines, srcLine{n: n, text: text, fenced: true})
			continue
		}
		lines = append(lines, srcLine{n: n, text: text})
	}
	return lines, invalidUTF8, unterminated
}

// stripComments removes the HTML comments of one line. open says whether
// the line starts inside a comment; the results say whether it ends inside
// one and, if so, whether that comment was opened on this line.
func stripComments(line string, open bool) (text string, stillOpen, openedHere bool) {
	var b strings.Builder
	for {
		if open {
			end := strings.Index(line, "-->")
			if end < 0 {
				return b.String(), true, openedHere
			}
			line = line[end+len("-->"):]
			open, openedHere = false, false
			continue
		}
		start := strings.Index(line, "<!--")
		if start < 0 {
			b.WriteString(line)
			return b.String(), false, false
		}
		b.WriteString(line[:start])
		line = line[start+len("<!--"):]
		open, openedHere = true, true
	}
}

// fenceMarker returns "```" or "~~~" when line opens a fenced code block.
func fenceMarker(line string) string {
	t := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(t, "```"):
		return "```"
	case strings.HasPrefix(t, "~~~"):
		return "~~~"
	}
	return ""
}

// heading parses an ATX heading: its level (number of '#') and its text with
// closing '#'s and surrounding emphasis removed. A level-1 heading needs a
// space after the '#' (so "#general" is not one); deeper ones are tolerated
// without ("##Identity").
func heading(line string) (level int, text string, ok bool) {
	t := strings.TrimSpace(line)
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 {
		return 0, "", false
	}
	rest := t[level:]
	tight := rest != "" && rest[0] != ' ' && rest[0] != '\t'
	if tight && level == 1 {
		return 0, "", false
	}
	rest = strings.TrimSpace(rest)
	// A closing sequence is a run of '#' preceded by a space, or any run
	// when the opening one had no space after it either ("##Name##"), so
	// that "## Notes on C#" keeps its '#'.
	if trimmed := strings.TrimRight(rest, "#"); len(trimmed) < len(rest) {
		if tight || trimmed == "" || strings.HasSuffix(trimmed, " ") || strings.HasSuffix(trimmed, "\t") {
			rest = strings.TrimSpace(trimmed)
		}
	}
	return level, unemphasize(rest), true
}

// unemphasize removes one pair of surrounding "**", "__", "*", "_" or "`".
func unemphasize(s string) string {
	for _, m := range []string{"**", "__", "*", "_", "`"} {
		if len(s) > 2*len(m) && strings.HasPrefix(s, m) && strings.HasSuffix(s, m) {
			return strings.TrimSpace(s[len(m) : len(s)-len(m)])
		}
	}
	return s
}

// normName is the comparison form of a section name or key: lower case,
// inner whitespace collapsed, trailing ':' removed.
func normName(s string) string {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ":"))
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// normKey is the comparison form of a "Key:" name: lower case with spaces,
// '_' and '-' removed, so "Backup manager", "backup_manager" and
// "BackupManager" are one key.
func normKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == '_' || r == '-' || unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bullet strips a list marker ("- ", "* ", "+ ", "• ", "1. ", "1) ") from a
// trimmed line; ok is false when there is none. A marker alone is an empty
// bullet. A '-' glued to its text ("-Name: x") is a bullet too, a common
// slip, unless a digit or another '-' follows ("-5", "---").
func bullet(t string) (rest string, ok bool) {
	for _, m := range []string{"-", "*", "+", "•"} {
		if t == m {
			return "", true
		}
		if strings.HasPrefix(t, m) {
			r := t[len(m):]
			if r[0] == ' ' || r[0] == '\t' {
				return strings.TrimSpace(r), true
			}
			if m == "-" && r[0] != '-' && (r[0] < '0' || r[0] > '9') {
				return strings.TrimSpace(r), true
			}
		}
	}
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && (t[i+1] == ' ' || t[i+1] == '\t') {
		return strings.TrimSpace(t[i+1:]), true
	}
	return "", false
}

// item is one entry of a section body.
type item struct {
	line   int
	text   string
	bullet bool
}

// items splits a section body into entries. Every bullet starts an entry;
// with joinWrapped, an indented non-bullet line right after an entry
// continues it (a wrapped bullet), otherwise every non-blank line is an
// entry of its own. Fenced lines are entries that are never bullets.
func items(lines []srcLine, joinWrapped bool) []item {
	var (
		out   []item
		parts [][]string // the wrapped lines of each entry, joined at the end
	)
	prevBlank := true
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			prevBlank = true
			continue
		}
		if l.fenced {
			out, parts = append(out, item{line: l.n}), append(parts, []string{t})
			prevBlank = false
			continue
		}
		if rest, ok := bullet(t); ok {
			out, parts = append(out, item{line: l.n, bullet: true}), append(parts, []string{rest})
		} else if joinWrapped && !prevBlank && len(out) > 0 && indented(l.text) {
			parts[len(parts)-1] = append(parts[len(parts)-1], t)
		} else {
			out, parts = append(out, item{line: l.n}), append(parts, []string{t})
		}
		prevBlank = false
	}
	kept := out[:0]
	for i := range out {
		out[i].text = strings.TrimSpace(strings.Join(parts[i], " "))
		if out[i].text != "" { // a bare list marker
			kept = append(kept, out[i])
		}
	}
	return kept
}

func indented(s string) bool {
	return s != "" && (s[0] == ' ' || s[0] == '\t')
}

// freeText is a section body as text: lines right-trimmed, the indentation
// common to all lines removed, leading and trailing blank lines dropped and
// runs of blank lines collapsed to one.
func freeText(lines []srcLine) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l.text) == "" {
			continue
		}
		n := len(l.text) - len(strings.TrimLeft(l.text, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	var b strings.Builder
	blank := false
	for _, l := range lines {
		t := strings.TrimRightFunc(l.text, unicode.IsSpace)
		if indent > 0 && len(t) >= indent {
			t = t[indent:]
		}
		if strings.TrimSpace(t) == "" && !l.fenced {
			blank = b.Len() > 0
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
			if blank {
				b.WriteByte('\n')
			}
		}
		blank = false
		b.WriteString(t)
	}
	return b.String()
}

// splitKV splits "Key: value" (also "**Key:** value" and "**Key**: value").
// ok is false when there is no plausible key: none, an empty one, or one so
// long that the colon is part of a sentence.
func splitKV(s string) (key, value string, ok bool) {
	for _, m := range []string{"**", "__"} {
		if !strings.HasPrefix(s, m) {
			continue
		}
		end := strings.Index(s[len(m):], m)
		if end < 0 {
			break
		}
		inner, rest := s[len(m):len(m)+end], s[len(m)+end+len(m):]
		if k, found := strings.CutSuffix(strings.TrimSpace(inner), ":"); found {
			return kvResult(k, rest)
		}
		if v, found := strings.CutPrefix(strings.TrimSpace(rest), ":"); found {
			return kvResult(inner, v)
		}
	}
	k, v, found := strings.Cut(s, ":")
	if !found {
		return "", "", false
	}
	return kvResult(k, v)
}

// maxKeyLen bounds a key: the longest known key ("Backup manager handle")
// is 21 bytes; a longer "prefix:" is prose with a colon in it.
const maxKeyLen = 40

func kvResult(k, v string) (string, string, bool) {
	k = strings.TrimSpace(k)
	if k == "" || len(k) > maxKeyLen || strings.ContainsAny(k, "<>`") {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}
