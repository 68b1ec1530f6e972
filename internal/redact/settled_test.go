package redact

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

const pemKey = "-----BEGIN RSA PRIVATE KEY-----\n" +
	"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" +
	"VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n" +
	"LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n" +
	"-----END RSA PRIVATE KEY-----"

// operatorPatterns are ## Redaction patterns as an operator writes them.
func operatorPatterns() []Pattern {
	return []Pattern{
		{Re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`), Description: "private key"},
		{Re: regexp.MustCompile(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`), Description: "card number"},
		{Re: regexp.MustCompile(`(?i)password:\s*\S+`), Description: "password"},
	}
}

// settledTexts are replies with something to redact in them.
func settledTexts() []string {
	words := strings.Repeat("some ordinary words of a reply, ", 6)
	return []string{
		words + "here is the key:\n" + pemKey + "\nand " + words,
		words + "card 1234-5678-9012-3456 and 9999-8888-7777-66665 " + words,
		words + "Password: hunter2-hunter2 " + words + "token xoxb-1234-5678-abcdefghij end " + words,
		words + "the value my-very-secret-api-key and bXktdmVyeS1zZWNyZXQtYXBpLWtleQ== " + words,
		words + "-----BEGIN RSA PRIVATE KEY-----\nno end in sight " + words,
	}
}

// Whatever comes next, what Settled showed for a prefix is a prefix of
// what Redact makes of the whole: nothing shown is ever taken back, so
// no part of a secret is ever shown; and it only grows.
func TestSettledIsAPrefixOfTheFinalText(t *testing.T) {
	r := New([]string{"my-very-secret-api-key"}, operatorPatterns())
	for n, text := range settledTexts() {
		final := r.Redact(text)
		grew := 0
		for k := 0; k <= len(text); k++ {
			s := r.Settled(text[:k])
			if !strings.HasPrefix(final, s) {
				t.Fatalf("text %d, prefix %d: settled %q is not a prefix of the final %q", n, k, s, final)
			}
			for _, leak := range []string{"BEGIN RSA", "MIIE", "1234-5678", "hunter2", "xoxb-", "my-very", "bXktdm"} {
				if strings.Contains(s, leak) {
					t.Fatalf("text %d, prefix %d: settled text shows %q: %q", n, k, leak, s)
				}
			}
			if len(s) < grew {
				t.Fatalf("text %d, prefix %d: settled text shrank from %d to %d bytes", n, k, grew, len(s))
			}
			grew = len(s)
		}
		if grew == 0 {
			t.Fatalf("text %d: nothing ever settled", n)
		}
	}
}

// A PEM key's first line is held back until its END arrives, then the
// whole key shows redacted; text after it settles as before.
func TestSettledHoldsBackAMultilineMatch(t *testing.T) {
	r := New(nil, operatorPatterns())
	before := strings.Repeat("an ordinary sentence. ", 10)
	mid := before + pemKey[:len(pemKey)/2]
	if s := r.Settled(mid); s != before[:len(s)] || len(s) > len(before) {
		t.Fatalf("halfway through the key: %q", s)
	}
	after := before + pemKey + strings.Repeat(" more words after the key", 10)
	s := r.Settled(after)
	if !strings.Contains(s, before+"[redacted: private key] more words") {
		t.Fatalf("after the key: %q", s)
	}
	// Ordinary text settles all but the tail that may still be a token.
	plain := strings.Repeat("nothing secret here at all. ", 40)
	if s := r.Settled(plain); len(s) < len(plain)-r.Window() {
		t.Fatalf("plain text: %d of %d bytes settled", len(s), len(plain))
	}
}

func BenchmarkSettled(b *testing.B) {
	r := New([]string{"my-very-secret-api-key"}, operatorPatterns())
	text := strings.Repeat("a perfectly ordinary reply about deploys and dashboards\n", 64) // ~3.6 KB
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r.Settled(text)
	}
}

// The same property over random texts and patterns that use what makes a
// match depend on what follows: greedy and lazy repeats, alternation,
// \b, ^ and $ per line, case folding.
func TestSettledRandomTexts(t *testing.T) {
	patterns := append(operatorPatterns(),
		Pattern{Re: regexp.MustCompile(`(?m)^secret: .*$`), Description: "secret line"},
		Pattern{Re: regexp.MustCompile(`api_key=\w+`), Description: "api key"},
		Pattern{Re: regexp.MustCompile(`tokens?\b`), Description: "token word"},
		Pattern{Re: regexp.MustCompile(`a+b|aac`), Description: "ab"},
		Pattern{Re: regexp.MustCompile(`(?i)bearer\s+[a-z0-9._-]+`), Description: "bearer"},
	)
	r := New([]string{"my-very-secret-api-key"}, patterns)
	pieces := []string{"word ", "a", "b", "c", "aa", "\n", "secret: ", "hidden", "api_key=", "k3y", "token", "tokens", " ", "Bearer ",
		"abc.def", "1234-5678-9012-3456", "-----BEGIN EC PRIVATE KEY-----", "Zm9v", "-----END EC PRIVATE KEY-----",
		"xoxb-1234-5678-abcdefghij", "my-very-secret-api-key", "bXktdmVyeS1zZWNyZXQtYXBpLWtleQ=="}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 80 {
		var b strings.Builder
		for range 5 + rng.IntN(20) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		final := r.Redact(text)
		prev := 0
		for k := 0; k <= len(text); k++ {
			s := r.Settled(text[:k])
			if !strings.HasPrefix(final, s) || len(s) < prev {
				t.Fatalf("text %d %q, prefix %d: settled %q (after %d bytes) against the final %q", n, text, k, s, prev, final)
			}
			prev = len(s)
		}
	}
}
