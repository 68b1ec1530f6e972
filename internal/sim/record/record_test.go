package record

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const soul = "## Identity\n- Name: Ada\n\n## Reporting\n- Manager: U0MGR\n\n## Mandate\nShips.\n\n## Trusted channels\n- <#C1>\n\n" +
	"## Approvers\n- <@U0APP>: deploy\n\n## Redaction\n- `ACME-[0-9]{6}` ; account\n"

func content(t *testing.T, blocks ...map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A thread with a scheduled run between two people's turns and a tool
// card: the run's turn and the tool card are left out and said so, the
// people's turns keep their answers, and the operator's pattern and the
// credentials are redacted everywhere.
func TestRecordLeavesOutWhatTheSimulatorCannotReplay(t *testing.T) {
	ctx := t.Context()
	clk := fake.NewClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	st, err := store.Open(ctx, store.InMemory, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := persona.Parse("SOUL.md", []byte(soul))
	if err != nil {
		t.Fatal(err)
	}
	key := pipeline.ThreadKey("C1", "5.1")
	if err := st.CreateSession(ctx, store.Session{ID: "s1", ThreadKey: key}); err != nil {
		t.Fatal(err)
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	reply := func(id, s string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": replyTool, "input": map[string]any{"text": s}}
	}
	add := func(role string, c json.RawMessage) {
		clk.Advance(time.Second)
		if err := st.AppendMessages(ctx, "s1", store.Message{Role: role, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	add(store.RoleUser, content(t, text(pipeline.Envelope("U0ALICE", "member", "check ACME-123456"))))
	add(store.RoleAssistant, content(t, reply("t1", "ACME-123456 is fine, token xoxb-1234567890-abcdef")))
	add(store.RoleUser, content(t, text(pipeline.Envelope("U0MGR", pipeline.EnvelopeScheduled, "nightly"))))
	add(store.RoleAssistant, content(t, reply("t2", "nightly report")))
	add(store.RoleUser, content(t, text(pipeline.Envelope("U0BOB", "member", "and now?"))))
	clk.Advance(time.Second)
	if err := st.CreateApproval(ctx, store.Approval{ID: "a1", ThreadKey: key, ChannelID: "C1", ThreadTS: "5.1", Category: "Bash", Tool: "Bash", Summary: "run ls"}); err != nil {
		t.Fatal(err)
	}
	add(store.RoleAssistant, content(t, reply("t3", "now **all** good")))

	patterns, err := redact.PersonaPatterns(p)
	if err != nil {
		t.Fatal(err)
	}
	file, notes, err := Record(ctx, st, p, redact.New(nil, patterns), Thread{Channel: "C1", ThreadTS: "5.1"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(file)
	for _, bad := range []string{"ACME-123456", "xoxb-1234567890", "nightly", "run ls"} {
		if strings.Contains(got, bad) {
			t.Errorf("the scenario holds %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"layer: trusted", "as: U0ALICE", "approvers: ['U0APP : deploy']", "send: {text: 'check [redacted: account]', as: U0ALICE",
		"send: {text: 'and now?', as: U0BOB", "expect_reply: {contains: 'redacted: account'}", "expect_reply: {contains: good}",
		"# Note: 1 turn(s) not started by a person", "# Note: the Bash card of"} {
		if !strings.Contains(got, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, got)
		}
	}
	if len(notes) != 2 {
		t.Errorf("notes %q", notes)
	}
	if _, _, err := Record(ctx, st, p, redact.New(nil, nil), Thread{Channel: "C1", ThreadTS: "9.9"}); err == nil || !strings.Contains(err.Error(), "no stored session") {
		t.Errorf("unknown thread: %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	for in, want := range map[string]string{
		"**Done**: all good":                   ": all good",
		"ok":                                   "ok",
		"see [the docs](https://x.y) for more": "the docs",
		"*a* `b` — the deploy finished well":   "— the deploy finished well",
		strings.Repeat("é", 40):                strings.Repeat("é", 30),
		"":                                     "",
	} {
		if got := excerpt(in); got != strings.TrimSpace(want) {
			t.Errorf("excerpt(%q) = %q, want %q", in, got, want)
		}
	}
}
