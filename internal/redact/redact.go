package redact

import (
	"regexp"
	"strings"

	"github.com/persona-runtime/agent/internal/secret"
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

// Redactor redacts text. It is safe for concurrent use.
type Redactor struct {
	secrets  *secret.Set // exact values, raw and encoded
	patterns []Pattern
	// quick lists substrings one of which must occur for any builtin or
	// secret to match, so clean text costs a few Index calls.
	quick []string
}

// New returns a Redactor for the given credential values and the
// operator's patterns.
func New(secrets []string, patterns []Pattern) *Redactor {
	// Values shorter than secret.MinLen would hit ordinary words (an unset
	// or test value like "x"); the Set leaves them out.
	r := &Redactor{quick: []string{"xox", "xapp-", "sk-ant-", "hooks.slack.com"}, secrets: secret.New(secrets...)}
	r.patterns = append(r.patterns, patterns...)
	return r
}

// Redact replaces every secret in text by "[redacted: <description>]": the
// credential values also when base64-, hex- or URL-encoded.
func (r *Redactor) Redact(text string) string {
	if text == "" {
		return text
	}
	text = r.secrets.Replace(text, "[redacted: credential]")
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
