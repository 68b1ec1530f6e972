package agent

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// previews records what a stream shows.
type previews struct {
	shown []string
}

func (p *previews) StartStream() pipeline.ReplyStream { return p }
func (p *previews) Preview(_ context.Context, md string) error {
	p.shown = append(p.shown, md)
	return nil
}
func (p *previews) Started() bool           { return len(p.shown) > 0 }
func (p *previews) Interval() time.Duration { return 0 }
func (p *previews) Finish(context.Context, string) (string, error) {
	return "1.1", nil
}
func (p *previews) Stop(context.Context) {}

// streamReply streams a reply whose tool input is input, in pieces of cut
// bytes, on a clock a second further at each look, and returns what was
// shown.
func streamReply(r *redact.Redactor, input string, cut int) *previews {
	p := &previews{}
	clock := time.Unix(0, 0)
	rs := &replyStreams{ctx: context.Background(), streamer: p, settled: r.Settled,
		now: func() time.Time { clock = clock.Add(time.Second); return clock }, calls: map[string]*replyCall{}}
	rs.ToolInputStart("t1", "mcp__agent_chat__reply")
	for i := 0; i < len(input); i += cut {
		rs.ToolInputDelta("t1", input[i:min(i+cut, len(input))])
	}
	return p
}

// A credential cut between two pieces of the streamed input is never
// shown, not even its first characters, however the pieces fall; what is
// shown is always redacted and grows by prefixes.
func TestReplyStreamsHoldBackCredentials(t *testing.T) {
	const token = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
	r := redact.New([]string{token}, nil)
	input := `{"text":"` + strings.Repeat("words before the secret, ", 8) + token + strings.Repeat(" and words after it", 8) + `"}`
	for cut := 3; cut < 40; cut += 4 {
		p := streamReply(r, input, cut)
		if len(p.shown) == 0 {
			t.Fatalf("cut %d: nothing shown", cut)
		}
		prev := ""
		for _, s := range p.shown {
			for k := 6; k <= len(token); k++ {
				if strings.Contains(s, token[:k]) {
					t.Fatalf("cut %d: a preview shows %q of the credential: %q", cut, token[:k], s)
				}
			}
			if !strings.HasPrefix(s, prev) {
				t.Fatalf("cut %d: preview %q does not extend %q", cut, s, prev)
			}
			prev = s
		}
	}
}

// A private key that an operator's ## Redaction pattern matches from its
// BEGIN line to its END line is never shown in part while it is written:
// no preview holds any of its lines, however the pieces fall, and the
// text after it streams on once its END has arrived.
func TestReplyStreamsHoldBackAMultilinePattern(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\\n" + strings.Repeat("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\\n", 8) +
		"-----END RSA PRIVATE KEY-----"
	r := redact.New(nil, []redact.Pattern{{Re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`), Description: "private key"}})
	input := `{"text":"` + strings.Repeat("words before the key, ", 8) + pem + strings.Repeat(" and words after it", 12) + `"}`
	for cut := 5; cut < 80; cut += 9 {
		p := streamReply(r, input, cut)
		last := p.shown[len(p.shown)-1]
		if !strings.Contains(last, "[redacted: private key] and words after") {
			t.Fatalf("cut %d: the text after the key never streamed: %q", cut, last)
		}
		for _, s := range p.shown {
			if strings.Contains(s, "BEGIN") || strings.Contains(s, "PRIVATE") || strings.Contains(s, "MIIE") {
				t.Fatalf("cut %d: a preview shows part of the key: %q", cut, s)
			}
		}
	}
}
