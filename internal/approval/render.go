package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/persona-runtime/agent/internal/textdiff"
)

// What a card shows of a call. A section of the platform's cards holds
// 3,000 characters and a message 50 blocks (platform-notes.md); the
// gateway spreads a long summary over several sections. These limits keep
// a card readable at a glance; what is over them is cut where the card
// says so, and the whole call goes with the card as a file.
const (
	// cardCallRunes is how many characters of a call's fields, as
	// written in the notation, a card shows: about a screenful.
	cardCallRunes = 2500
	// cardCallLines is how many lines of them a card shows.
	cardCallLines = 40
	// cardInlineRunes is the most a card shows of a one-line field (a
	// file's path).
	cardInlineRunes = 300
)

// partKind is how a part of a rendered call is written.
type partKind uint8

const (
	prose  partKind = iota // mrkdwn written by the runtime, as is
	block                  // a field of the call, in a code block
	inline                 // a one-line field of the call, in inline code
)

// part is one piece of a call as a card shows it.
type part struct {
	kind partKind
	text string // prose: mrkdwn; block and inline: the field's raw text, already redacted
	mode visMode
}

// rendered is a call as a card shows it.
type rendered struct {
	// Card is the summary the card shows: the call, cut to the card's
	// limits where needed, with its notation explained and, when cut,
	// a line saying so.
	Card string
	// Full is the whole call in the same notation, never cut: what is
	// attached to the card when Cut.
	Full string
	Cut  bool
}

// renderCall renders a tool call for a person: lead (what the runtime
// says of the call first), then every field that decides what runs,
// whole, in the visible notation (visible.go), redacted.
func renderCall(tool string, input json.RawMessage, redact func(string) string, lead ...part) rendered {
	parts := append(lead, callParts(tool, input, redact)...)
	full, used, total, _ := writeParts(parts, -1, -1)
	card, shown, n, cut := writeParts(parts, cardCallRunes, cardCallLines)
	if cut {
		// Right under the cut field: the parts after it are left out.
		card += fmt.Sprintf("\n✂ *The call is too long for this card:* it shows %d of its %d characters (as written here).", n, total)
	}
	if legend := used.legend(); legend != "" {
		full += "\n" + legend
	}
	if legend := shown.legend(); legend != "" {
		card += "\n" + legend
	}
	return rendered{Card: card, Full: full, Cut: cut}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// callParts is the call tool(input) as parts. Bash, Write and Edit decode
// their input exactly as the tools do (the same function and field
// names, so a key in another case or given twice is read as the tool
// reads it); every other key of the input is shown too.
func callParts(tool string, input json.RawMessage, redact func(string) string) []part {
	name := part{kind: inline, text: tool, mode: modeInline}
	if len(input) == 0 {
		input = json.RawMessage("{}") // as the tools read it
	}
	switch tool {
	case "Bash":
		var in struct {
			Command string  `json:"command"`
			Timeout float64 `json:"timeout"`
		}
		if json.Unmarshal(input, &in) == nil {
			return append([]part{name, {kind: prose, text: " wants to run:"},
				{kind: block, text: redact(in.Command), mode: modeText}}, otherInput(input, redact, "command")...)
		}
	case "Write":
		var in struct {
			FilePath string  `json:"file_path"`
			Content  *string `json:"content"`
		}
		if json.Unmarshal(input, &in) == nil && in.Content != nil {
			c := *in.Content
			ps := []part{name, {kind: prose, text: " wants to write "}, {kind: inline, text: redact(in.FilePath), mode: modeInline},
				{kind: prose, text: fmt.Sprintf(": %s, %s, sha256 `%x`", plural(len(c), "byte"), plural(lineCount(c), "line"), sha256.Sum256([]byte(c)))}}
			if c != "" {
				ps = append(ps, part{kind: block, text: redact(c), mode: modeText})
			}
			return append(ps, otherInput(input, redact, "file_path", "content")...)
		}
	case "Edit":
		var in struct {
			FilePath   string  `json:"file_path"`
			OldString  *string `json:"old_string"`
			NewString  *string `json:"new_string"`
			ReplaceAll bool    `json:"replace_all"`
		}
		if json.Unmarshal(input, &in) == nil && in.OldString != nil && in.NewString != nil {
			which := "the one occurrence of `old_string`"
			if in.ReplaceAll {
				which = "every occurrence of `old_string`"
			}
			return append([]part{name, {kind: prose, text: " wants to change "}, {kind: inline, text: redact(in.FilePath), mode: modeInline},
				{kind: prose, text: ", " + which + ":"},
				{kind: block, text: editDiff(redact(*in.OldString), redact(*in.NewString)), mode: modeDiff}},
				otherInput(input, redact, "file_path", "old_string", "new_string", "replace_all")...)
		}
	}
	if j, ok := prettyJSON(input, redact, nil); ok {
		if j == "{}" {
			return []part{name, {kind: prose, text: " wants to run, with no input."}}
		}
		return []part{name, {kind: prose, text: " wants to run with:"}, {kind: block, text: j, mode: modeJSON}}
	}
	// Not JSON: the tool will refuse it; show it as it came.
	return []part{name, {kind: prose, text: " wants to run with this input (not JSON):"},
		{kind: block, text: redact(string(input)), mode: modeText}}
}

// otherInput shows the keys of input other than the ones named.
func otherInput(input json.RawMessage, redact func(string) string, known ...string) []part {
	j, ok := prettyJSON(input, redact, known)
	if !ok || j == "{}" {
		return nil
	}
	return []part{{kind: prose, text: "\nwith the other input:"}, {kind: block, text: j, mode: modeJSON}}
}

// prettyJSON is input indented, keys sorted, numbers as written, every
// string redacted, without the keys in skip (exact names).
func prettyJSON(input json.RawMessage, redact func(string) string, skip []string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return "", false
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range skip {
			delete(m, k)
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(redactJSON(v, redact)) != nil {
		return "", false
	}
	return strings.TrimSuffix(out.String(), "\n"), true
}

// redactJSON redacts every string of v, keys included.
func redactJSON(v any, redact func(string) string) any {
	switch v := v.(type) {
	case string:
		return redact(v)
	case []any:
		for i := range v {
			v[i] = redactJSON(v[i], redact)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[redact(k)] = redactJSON(x, redact)
		}
		return out
	}
	return v
}

// editDiff is the change an Edit makes to the text it replaces, as a
// unified diff of old_string and new_string with every line shown.
func editDiff(old, new string) string {
	d := textdiff.Whole("old_string", "new_string", old, new)
	oldNL, newNL := strings.HasSuffix(old, "\n"), strings.HasSuffix(new, "\n")
	if !strings.Contains(d, "\n@@") && old != new {
		// The lines are the same; only the final line break differs.
		var b strings.Builder
		b.WriteString(d)
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkSpan(lineCount(old)), hunkSpan(lineCount(new)))
		for _, l := range strings.Split(strings.TrimSuffix(old, "\n"), "\n") {
			b.WriteString(" " + l + "\n")
		}
		d = b.String()
	}
	// A line starting with a backslash cannot come from either text: every
	// line of a diff starts with a space, +, - or @.
	switch {
	case oldNL && !newNL:
		d += `\ old_string ends with a line break; new_string does not`
	case !oldNL && newNL:
		d += `\ new_string ends with a line break; old_string does not`
	}
	return strings.TrimSuffix(d, "\n")
}

// hunkSpan is the range of a hunk of n lines from the first, as diff -u
// writes it.
func hunkSpan(n int) string {
	switch n {
	case 0:
		return "0,0"
	case 1:
		return "1"
	}
	return fmt.Sprintf("1,%d", n)
}

// lineCount is how many lines s has (a last line without a line break
// counts).
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// writeParts writes parts as mrkdwn, the fields within maxRunes
// characters and maxLines lines in all (-1: no limit). It reports the
// notation used, how many characters of fields it wrote and whether a
// field was cut. A cut field shows a prefix of itself, written as that
// prefix alone would be (the notation never shows half a marker); a cut
// one-line field is followed by ✂, and the parts after a cut block are
// left out.
func writeParts(parts []part, maxRunes, maxLines int) (string, notation, int, bool) {
	var (
		b       strings.Builder
		used    notation
		written int
		cut     bool
	)
	limited := maxRunes >= 0
	runes, lines := maxRunes, maxLines
	for _, p := range parts {
		if p.kind == prose {
			b.WriteString(p.text)
			continue
		}
		if limited && (runes <= 0 || lines <= 0) {
			cut = true
			break
		}
		limRunes, limLines := runes, lines
		if p.kind == inline && limited {
			limRunes = min(limRunes, cardInlineRunes)
		}
		text, u, whole := fit(p, limRunes, limLines)
		used.add(u)
		n := utf8.RuneCountInString(text)
		written += n
		if limited {
			runes -= n
			lines -= strings.Count(text, "\n") + 1
		}
		if p.kind == inline {
			b.WriteString("`" + text + "`")
			if !whole {
				cut = true
				b.WriteString("✂")
			}
			continue
		}
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("```\n" + text + "\n```")
		if !whole {
			cut = true
			break
		}
	}
	return b.String(), used, written, cut
}

// fit writes p in its notation within maxRunes characters and maxLines
// lines (-1: no limit), and reports whether it is whole. A cut ends at a
// line break when one is near.
func fit(p part, maxRunes, maxLines int) (string, notation, bool) {
	fits := func(s string) bool {
		return (maxRunes < 0 || utf8.RuneCountInString(s) <= maxRunes) &&
			(maxLines < 0 || strings.Count(s, "\n")+1 <= maxLines)
	}
	out, used := visible(p.text, p.mode)
	if fits(out) {
		return out, used, true
	}
	if maxRunes == 0 || maxLines == 0 {
		return "", notation{}, false
	}
	// The longest prefix whose rendering fits: the rendering's length is
	// nearly monotonic in the prefix's (a run of spaces shrinks once
	// counted), so a bisection keeps lo fitting and hi not.
	lo, hi := 0, len(p.text)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		for mid > lo && !utf8.RuneStart(p.text[mid]) {
			mid--
		}
		if mid == lo {
			break
		}
		if s, _ := visible(p.text[:mid], p.mode); fits(s) {
			lo = mid
		} else {
			hi = mid
		}
	}
	cut := lo
	if nl := strings.LastIndexByte(p.text[:lo], '\n'); nl > 0 && nl >= lo/2 {
		cut = nl
	}
	out, used = visible(p.text[:cut], p.mode)
	return out, used, false
}
