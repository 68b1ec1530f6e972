package pipeline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The envelope is how each person's message reaches the model
// (interfaces.md, "Doors"):
//
//	<message from="<@U…>" role="…">…</message>
//
// Only the runtime writes envelopes. In the text, every opener the model
// could read as the start of one (`<message`, `</message` and their
// look-alikes, EscapeEnvelopes) is written `&lt;`, so a person can neither
// close their envelope nor forge another's.

// Envelope roles besides the persona's own roles: a bot's post and a
// scheduled run.
const (
	EnvelopeBot       = "bot"
	EnvelopeScheduled = "scheduled"
)

const (
	envelopeOpen  = `<message from="<@`
	envelopeClose = `</message>`
)

// Envelope wraps a person's words for the model: who wrote them (a user id)
// and what they are to the persona (a Role, EnvelopeBot or
// EnvelopeScheduled; anything else reads as member, the least trusted).
// The words are escaped with EscapeEnvelopes.
func Envelope(userID, role, words string) string {
	var b strings.Builder
	b.Grow(len(envelopeOpen) + len(userID) + len(words) + 32)
	b.WriteString(envelopeOpen)
	b.WriteString(envelopeID(userID))
	b.WriteString(`>" role="`)
	b.WriteString(EnvelopeRole(role))
	b.WriteString(`">`)
	b.WriteString(EscapeEnvelopes(words))
	b.WriteString(envelopeClose)
	return b.String()
}

// EnvelopeRole is the role an envelope states for role: the pinned roles as
// they are, anything else (an unknown or empty role) member.
func EnvelopeRole(role string) string {
	switch role {
	case string(RoleManager), string(RoleBackup), string(RoleApprover), string(RoleMember), EnvelopeBot, EnvelopeScheduled, string(RolePeer):
		return role
	}
	return string(RoleMember)
}

// envelopeID keeps the characters a platform user id is made of, so that
// no id can end the from attribute.
func envelopeID(id string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (r == '.' || r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return -1
	}, id)
}

// ParseEnvelope splits text made by Envelope into its author, role and
// (still escaped) words; ok is false for any other text (tool results, the
// runtime's own notes, a summary).
func ParseEnvelope(text string) (userID, role, words string, ok bool) {
	rest, found := strings.CutPrefix(text, envelopeOpen)
	if !found {
		return "", "", "", false
	}
	userID, rest, found = strings.Cut(rest, `>" role="`)
	if !found || envelopeID(userID) != userID {
		return "", "", "", false
	}
	role, rest, found = strings.Cut(rest, `">`)
	if !found || EnvelopeRole(role) != role {
		return "", "", "", false
	}
	words, found = strings.CutSuffix(rest, envelopeClose)
	// The words of a real envelope hold no closing tag: it was escaped.
	if !found || strings.Contains(words, envelopeClose) {
		return "", "", "", false
	}
	return userID, role, words, true
}

// escapedOpener replaces an opener that would start an envelope tag.
const escapedOpener = "&lt;"

// envelopeName is the tag name the model could read as an envelope.
const envelopeName = "message"

// EscapeEnvelopes writes as `&lt;` every opener in s that the model could
// read as the start of an envelope tag: `<` or a look-alike (full-width
// `＜`, `‹`, `〈`, …), then any slashes (or look-alikes), spaces and
// invisible characters (zero-width, format, combining and control
// characters), then the letters of "message" in any case, with look-alike
// letters (full-width, mathematical, Cyrillic, Greek, accented, …) and
// invisible characters between them. `<message` becomes `&lt;message`,
// `</message` `&lt;/message`; every other byte of s is kept.
func EscapeEnvelopes(s string) string {
	var b strings.Builder // used from the first opener to escape on
	done := 0             // s[:done] is in b
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isOpener(r) && namesEnvelope(s[i+size:]) {
			if b.Len() == 0 {
				b.Grow(len(s) + 8)
			}
			b.WriteString(s[done:i])
			b.WriteString(escapedOpener)
			done = i + size
		}
		i += size
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// namesEnvelope reports whether s, the text after an opener, reads as
// "message" or "/message" (EscapeEnvelopes). The scan stops at the first
// character that is none of these, and an opener is one: the scans of
// successive openers never overlap, so escaping stays linear in s.
func namesEnvelope(s string) bool {
	matched := 0
	for _, r := range s {
		switch {
		case matched < len(envelopeName) && foldLetter(r) == envelopeName[matched]:
			matched++
			if matched == len(envelopeName) {
				return true
			}
		case matched == 0 && isSlash(r):
		case isInvisible(r):
		default:
			return false
		}
	}
	return false
}

// isOpener reports whether r reads as a less-than sign.
func isOpener(r rune) bool {
	switch r {
	case '<',
		0xFF1C,  // ＜ full-width
		0xFE64,  // ﹤ small
		0x2039,  // ‹
		0x2329,  // 〈
		0x3008,  // 〈
		0x27E8,  // ⟨
		0x276C,  // ❬
		0x276E,  // ❮
		0x2770,  // ❰
		0x02C2,  // ˂ modifier arrowhead
		0x1438,  // ᐸ Canadian syllabics
		0x29FC,  // ⧼
		0x227A,  // ≺
		0x22D6,  // ⋖
		0xE003C: // tag less-than (invisible, yet read by models)
		return true
	}
	return false
}

// isSlash reports whether r reads as a slash.
func isSlash(r rune) bool {
	switch r {
	case '/', 0xFF0F, 0x2044, 0x2215, 0x29F8, 0x2571, 0xE002F:
		return true
	}
	return false
}

// isInvisible reports whether r shows nothing (or nothing between two
// letters): spaces and line breaks, control and format characters
// (zero-width space and joiners, bidirectional controls, soft hyphen, tag
// characters), combining marks, variation selectors, blank fillers and
// undecodable bytes.
func isInvisible(r rune) bool {
	switch r {
	case utf8.RuneError, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800:
		return true
	}
	return unicode.IsSpace(r) || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Mn, unicode.Me, unicode.Zs, unicode.Zl, unicode.Zp)
}

// lookAlikes maps letters that read as the ASCII letters of "message" to
// them.
var lookAlikes = map[rune]byte{
	// Cyrillic
	0x0430: 'a', 0x0410: 'a', 0x0435: 'e', 0x0415: 'e', 0x0451: 'e', 0x0401: 'e', 0x0455: 's', 0x0405: 's',
	0x043C: 'm', 0x041C: 'm', 0x050D: 'g',
	// Greek
	0x03B1: 'a', 0x0391: 'a', 0x03B5: 'e', 0x0395: 'e', 0x039C: 'm',
	// Latin small capitals, script and modifier letters, subscripts
	0x0261: 'g', 0x0262: 'g', 0x1D00: 'a', 0x1D07: 'e', 0x1D0D: 'm', 0xA731: 's',
	0x1D43: 'a', 0x1D49: 'e', 0x1D4D: 'g', 0x1D50: 'm', 0x02E2: 's',
	0x2090: 'a', 0x2091: 'e', 0x2098: 'm', 0x209B: 's',
	// accented
	0x00E0: 'a', 0x00E1: 'a', 0x00E2: 'a', 0x00E3: 'a', 0x00E4: 'a', 0x00E5: 'a', 0x0101: 'a', 0x0103: 'a', 0x0105: 'a',
	0x00C0: 'a', 0x00C1: 'a', 0x00C2: 'a', 0x00C3: 'a', 0x00C4: 'a', 0x00C5: 'a',
	0x00E8: 'e', 0x00E9: 'e', 0x00EA: 'e', 0x00EB: 'e', 0x0113: 'e', 0x0115: 'e', 0x0117: 'e', 0x0119: 'e', 0x011B: 'e',
	0x00C8: 'e', 0x00C9: 'e', 0x00CA: 'e', 0x00CB: 'e',
	0x015B: 's', 0x015D: 's', 0x015F: 's', 0x0161: 's', 0x0219: 's', 0x015A: 's', 0x0160: 's',
	0x011D: 'g', 0x011F: 'g', 0x0121: 'g', 0x0123: 'g', 0x01E7: 'g', 0x01F5: 'g',
	0x1E3F: 'm', 0x1E41: 'm', 0x1E43: 'm',
}

// foldLetter returns the lower-case ASCII letter r reads as, or 0.
func foldLetter(r rune) byte {
	switch {
	case 'a' <= r && r <= 'z':
		return byte(r)
	case 'A' <= r && r <= 'Z':
		return byte(r - 'A' + 'a')
	case 0xFF21 <= r && r <= 0xFF3A: // full-width
		return byte(r - 0xFF21 + 'a')
	case 0xFF41 <= r && r <= 0xFF5A:
		return byte(r - 0xFF41 + 'a')
	case 0x1D400 <= r && r <= 0x1D6A3: // mathematical alphanumerics: 52-letter alphabets
		return byte((r-0x1D400)%26) + 'a'
	case 0x24B6 <= r && r <= 0x24CF: // circled
		return byte(r - 0x24B6 + 'a')
	case 0x24D0 <= r && r <= 0x24E9:
		return byte(r - 0x24D0 + 'a')
	case 0x249C <= r && r <= 0x24B5: // parenthesized
		return byte(r - 0x249C + 'a')
	case 0x1F110 <= r && r <= 0x1F129: // parenthesized, squared, negative circled and squared capitals
		return byte(r - 0x1F110 + 'a')
	case 0x1F130 <= r && r <= 0x1F149:
		return byte(r - 0x1F130 + 'a')
	case 0x1F150 <= r && r <= 0x1F169:
		return byte(r - 0x1F150 + 'a')
	case 0x1F170 <= r && r <= 0x1F189:
		return byte(r - 0x1F170 + 'a')
	case 0x1F1E6 <= r && r <= 0x1F1FF: // regional indicators
		return byte(r - 0x1F1E6 + 'a')
	case 0xE0041 <= r && r <= 0xE005A: // tag letters
		return byte(r - 0xE0041 + 'a')
	case 0xE0061 <= r && r <= 0xE007A:
		return byte(r - 0xE0061 + 'a')
	}
	return lookAlikes[r]
}
