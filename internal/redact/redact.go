package redact

import (
	"regexp"
	"strings"
	"sync"

	"github.com/persona-runtime/agent/pkg/secret"
)

// Pattern is an operator-defined pattern and what it stands for.
type Pattern struct {
	Re          *regexp.Regexp
	Description string
}

// builtin are the token formats redacted whatever SOUL.md says. Slack's
// tokens start with xox[abposre]- or xapp-; the provider's keys with sk-ant-.
var builtin = []Pattern{
	{regexp.MustCompile(`xox[abposre]-[0-9A-Za-z][0-9A-Za-z-]{8,}`), "chat token"},
	{regexp.MustCompile(`xapp-[0-9]-[0-9A-Za-z-]{8,}`), "chat app token"},
	{regexp.MustCompile(`sk-ant-[a-z]{2,4}[0-9]{2}-[0-9A-Za-z_-]{16,}`), "model provider key"},
	{regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows)/[0-9A-Za-z/_-]+`), "webhook url"},
}

// builtinLive are the builtins compiled for Settled, once per process.
var builtinLive = sync.OnceValue(func() []compiled { return compile(builtin) })

// compiled is a pattern with its marker and its program for Settled.
type compiled struct {
	Pattern
	marker string
	live   live
}

func compile(ps []Pattern) []compiled {
	out := make([]compiled, len(ps))
	for i, p := range ps {
		out[i] = compiled{Pattern: p, marker: "[redacted: " + p.Description + "]", live: newLive(p.Re)}
	}
	return out
}

// credentialMarker replaces a credential value.
const credentialMarker = "[redacted: credential]"

// Redactor redacts text. It is safe for concurrent use.
type Redactor struct {
	secrets  *secret.Set // exact values, raw and encoded
	patterns []Pattern
	// quick lists substrings one of which must occur for any builtin or
	// secret to match, so clean text costs a few Index calls.
	quick []string
	// operator are the patterns compiled for Settled, on first use.
	operator func() []compiled
	queues   sync.Pool // *[2]queue, Settled's scratch
}

// New returns a Redactor for the given credential values and the
// operator's patterns.
func New(secrets []string, patterns []Pattern) *Redactor {
	// Values shorter than secret.MinLen would hit ordinary words (an unset
	// or test value like "x"); the Set leaves them out.
	r := &Redactor{quick: []string{"xox", "xapp-", "sk-ant-", "hooks.slack.com"}, secrets: secret.New(secrets...)}
	r.patterns = append(r.patterns, patterns...)
	r.operator = sync.OnceValue(func() []compiled { return compile(r.patterns) })
	return r
}

// Redact replaces every secret in text by "[redacted: <description>]": the
// credential values also when base64-, hex- or URL-encoded.
func (r *Redactor) Redact(text string) string {
	if text == "" {
		return text
	}
	text = r.secrets.Replace(text, credentialMarker)
	hit := false
	for _, q := range r.quick {
		if strings.Contains(text, q) {
			hit = true
			break
		}
	}
	if hit {
		for _, p := range builtin {
			text = replace(p, text)
		}
	}
	for _, p := range r.patterns {
		text = replace(p, text)
	}
	return text
}

func replace(p Pattern, text string) string {
	if !p.Re.MatchString(text) {
		return text
	}
	return p.Re.ReplaceAllLiteralString(text, "[redacted: "+p.Description+"]")
}

// Window is how much of a text's tail may still turn out to be part of a
// credential when more of the text follows: the longest encoded form of
// the credential values, or 64 bytes at least (the token formats).
func (r *Redactor) Window() int {
	return max(r.secrets.Window(), 64)
}

// Settled returns the longest prefix of Redact(text) that no text
// appended to text can change: what a reply the model is still writing
// may show. The rule, stage by stage as Redact runs them:
//
//   - credential values: the last Window bytes are held back (no form of
//     a value is longer);
//   - each pattern, the token formats and the operator's ## Redaction
//     alike: everything from the earliest position where a match may
//     still begin once more text comes (see live), and from the start of
//     a match that reaches into what is held back already. A pattern
//     that spans lines (a PEM key, BEGIN to END) holds back from its
//     first line until its last has arrived, where a fixed tail would
//     show the first lines.
//
// Its cost is one pass of each pattern's VM over the text (see live) on
// top of Redact; a pattern that can match arbitrarily long text from
// almost anywhere (`.*secret`) holds back from the start of the line
// (or, with (?s), of the text) it could begin in.
func (r *Redactor) Settled(text string) string {
	q := r.queues.Get()
	if q == nil {
		q = new([2]queue)
	}
	defer r.queues.Put(q)
	qs := q.(*[2]queue)
	// The cut is placed in text itself, before the markers shorten it,
	// so that it only moves forward as the text grows.
	t, cut := splice(text, r.secrets.Spans(text), credentialMarker, max(0, len(text)-r.Window()))
	for _, ps := range [][]compiled{builtinLive(), r.operator()} {
		for i := range ps {
			t, cut = ps[i].settle(t, cut, qs)
		}
	}
	return t[:cut]
}

// settle applies p to t as Redact does, and moves cut (t[:cut] is
// settled) back to where p leaves t undecided; it returns the redacted
// text and the cut in it.
func (p *compiled) settle(t string, cut int, qs *[2]queue) (string, int) {
	cut = min(cut, p.live.from(t[:cut], &qs[0], &qs[1]))
	locs := p.Re.FindAllStringIndex(t, -1)
	spans := make([][2]int, len(locs))
	for i, m := range locs {
		spans[i] = [2]int{m[0], m[1]}
	}
	return splice(t, spans, p.marker, cut)
}

// splice replaces the spans (sorted, apart) of t by marker, as Redact
// does, and maps cut into the result, first moving it to the start of a
// span it would split.
func splice(t string, spans [][2]int, marker string, cut int) (string, int) {
	if len(spans) == 0 {
		return t, cut
	}
	for _, m := range spans {
		if m[0] < cut && cut < m[1] {
			cut = m[0]
			break
		}
	}
	var b strings.Builder
	b.Grow(len(t))
	at, shift := 0, 0
	for _, m := range spans {
		b.WriteString(t[at:m[0]])
		b.WriteString(marker)
		at = m[1]
		if m[1] <= cut {
			shift += len(marker) - (m[1] - m[0])
		}
	}
	b.WriteString(t[at:])
	return b.String(), cut + shift
}
