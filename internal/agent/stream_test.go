package agent

import (
	"context"
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

// A credential cut between two pieces of the streamed input is never
// shown, not even its first characters, however the pieces fall; what is
// shown is always redacted and grows by prefixes.
func TestReplyStreamsHoldBackCredentials(t *testing.T) {
	const token = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
	r := redact.New([]string{token}, nil)
	input := `{"text":"` + strings.Repeat("words before the secret, ", 8) + token + strings.Repeat(" and words after it", 8) + `"}`
	for cut := 3; cut < 40; cut += 4 {
		p := &previews{}
		clock := time.Unix(0, 0)
		rs := &replyStreams{ctx: context.Background(), streamer: p, redact: r.Redact, holdback: max(r.Window(), minHoldback),
			now: func() time.Time { clock = clock.Add(time.Second); return clock }, calls: map[string]*replyCall{}}
		rs.ToolInputStart("t1", "mcp__agent_chat__reply")
		for i := 0; i < len(input); i += cut {
			rs.ToolInputDelta("t1", input[i:min(i+cut, len(input))])
		}
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
