package redact

import (
	"regexp"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r := New([]string{"my-very-secret-api-key", "short"}, []Pattern{
		{Re: regexp.MustCompile(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`), Description: "card number"},
	})
	cases := []struct {
		name, in, want string
	}{
		{"clean text untouched", "hello <@U123> how are you?", "hello <@U123> how are you?"},
		{"credential value", "key is my-very-secret-api-key!", "key is [redacted: credential]!"},
		{"credential in hex", "dump: 6d792d766572792d7365637265742d6170692d6b6579 end", "dump: [redacted: credential] end"},
		{"credential in base64", "b64: bXktdmVyeS1zZWNyZXQtYXBpLWtleQ== end", "b64: [redacted: credential] end"},
		{"short values are not secrets", "a short story", "a short story"},
		{"bot token format", "use xoxb-1234-5678-abcdefghij please", "use [redacted: chat token] please"},
		{"app token format", "xapp-1-A0123-456-abcdef0123", "[redacted: chat app token]"},
		{"provider key", "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA_bb", "[redacted: model provider key]"},
		{"oauth token", "sk-ant-oat01-AAAAAAAAAAAAAAAAAAAAAAAA", "[redacted: model provider key]"},
		{"operator pattern", "card 1234-5678-9012-3456 ok", "card [redacted: card number] ok"},
		{"empty", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := r.Redact(c.in); got != c.want {
				t.Fatalf("Redact(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestRedactNeverLeavesSecret(t *testing.T) {
	secret := "xoxb-9999-8888-supersecretvalue"
	r := New([]string{secret}, nil)
	in := strings.Repeat("noise ", 10) + secret + " and again " + secret
	if got := r.Redact(in); strings.Contains(got, secret) || strings.Contains(got, "supersecret") {
		t.Fatalf("secret survived: %q", got)
	}
}

func BenchmarkRedactClean(b *testing.B) {
	r := New([]string{"my-very-secret-api-key"}, []Pattern{{Re: regexp.MustCompile(`\b\d{16}\b`), Description: "card"}})
	text := strings.Repeat("a perfectly ordinary message about deploys ", 10)
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(text)
	}
}
