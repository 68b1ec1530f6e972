package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// streamReply is a long reply with a table, a code block and the bot
// token in its middle (which the redactor must catch even when the
// pieces cut it).
func streamReply() string {
	var b strings.Builder
	b.WriteString("Here is the **status** of the rollout:\n\n| service | state |\n|---|---|\n| api | up |\n| worker | degraded |\n\n")
	for i := range 12 {
		b.WriteString("- step ")
		b.WriteString(string(rune('a' + i)))
		b.WriteString(": checked the dashboards and the logs of the service, nothing unusual\n")
	}
	b.WriteString("\nThe token xoxb-test-token must never show.\n\n```sh\nkubectl rollout status deploy/api\n```\n\nDone.")
	return b.String()
}

// scriptStream makes the model write the reply slowly: pieces of its
// input every delay, and records when each answer began; firstBegan
// reads when the first did (under the lock the fake's later calls take).
func scriptStream(h *harness, text string, pieces int, delay time.Duration) (firstBegan func() time.Time) {
	var mu sync.Mutex
	var began []time.Time
	n := 0
	h.model.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse {
		mu.Lock()
		defer mu.Unlock()
		n++
		began = append(began, time.Now())
		if n == 1 {
			r := fake.ToolUse("t1", "mcp__agent_chat__reply", map[string]string{"text": text})
			r.InputChunks, r.ChunkDelay = pieces, delay
			return r
		}
		return fake.TextReply("")
	}
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return began[0]
	}
}

// With the model writing a 2-second reply, its first words are in the
// thread well before it is done, appends are rate-bounded, nothing of the
// credential is ever shown, and the final message is exactly the
// non-streamed rendering.
func TestStreamingReplies(t *testing.T) {
	text := streamReply()

	// The rendering without streaming, for comparison.
	plain := newHarness(t, testSoul)
	plain.env["AGENT_STREAM"] = "off"
	scriptStream(plain, text, 20, 0)
	plain.start()
	plain.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	want := plain.expectReply("D0MGR", "100.1", "rollout").Text
	if len(plain.slack.Streams()) != 0 {
		t.Fatalf("AGENT_STREAM=off streamed: %+v", plain.slack.Streams())
	}

	h := newHarness(t, testSoul)
	began := scriptStream(h, text, 20, 100*time.Millisecond)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	final, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return strings.Contains(p.Text, "Done.") })
	if err != nil {
		t.Fatalf("no final edit: %v\nstreams %+v\nposts %+v", err, h.slack.Streams(), h.slack.Posts())
	}
	streams := h.slack.Streams()
	if len(streams) < 3 || streams[0].Method != "chat.startStream" || streams[len(streams)-1].Method != "chat.stopStream" {
		t.Fatalf("stream calls: %+v", streams)
	}
	first := streams[0].At.Sub(began())
	t.Logf("first words in the thread %v after the model's answer began (input written over ~2 s)", first.Round(time.Millisecond))
	if first > 1500*time.Millisecond {
		t.Errorf("the first words came %v after the model began", first)
	}
	if !streams[0].At.Before(final.At.Add(-500 * time.Millisecond)) {
		t.Errorf("the stream started at the end, not while the reply was written")
	}
	var shown strings.Builder
	appends := 0
	for i, s := range streams {
		shown.WriteString(s.Text)
		if s.Method == "chat.appendStream" {
			appends++
			if gap := s.At.Sub(streams[i-1].At); gap < 200*time.Millisecond {
				t.Errorf("append %d came %v after the one before", appends, gap)
			}
		}
		if s.ThreadTS != "" && s.ThreadTS != "100.1" {
			t.Errorf("stream in thread %q", s.ThreadTS)
		}
	}
	if strings.Contains(shown.String(), "xoxb-test") || strings.Contains(final.Text, "xoxb-test") {
		t.Errorf("the credential was shown: %q", shown.String())
	}
	if final.TS != streams[0].TS || final.Text != want {
		t.Errorf("final message (%s):\n%s\nwant the non-streamed rendering:\n%s", final.TS, final.Text, want)
	}
	for _, p := range h.slack.Posts() {
		if strings.Contains(p.Text, "rollout") {
			t.Errorf("the reply was also posted: %q", p.Text)
		}
	}
	h.waitMetric(`agent_inbox_events_total{outcome="answered"}`, 1)
}

// Where the platform refuses streaming, the reply is posted and edited at
// a bounded rate, and ends as the same rendering.
func TestStreamingFallsBackToEdits(t *testing.T) {
	text := streamReply()
	h := newHarness(t, testSoul)
	h.slack.Errors = map[string]string{"chat.startStream": "method_not_supported"}
	scriptStream(h, text, 20, 100*time.Millisecond)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	final, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return strings.Contains(p.Text, "Done.") })
	if err != nil {
		t.Fatal(err)
	}
	var preview *fake.Post
	for _, p := range h.slack.Posts() {
		if strings.Contains(p.Text, "rollout") {
			if preview != nil {
				t.Fatalf("posted twice: %q", p.Text)
			}
			preview = &p
		}
	}
	if preview == nil || preview.TS != final.TS || strings.Contains(preview.Text, "Done.") {
		t.Fatalf("preview %+v, final %s", preview, final.TS)
	}
	var last time.Time
	edits := 0
	for _, u := range h.slack.Updates() {
		if u.TS != final.TS || u.Text == final.Text {
			continue
		}
		edits++
		if !last.IsZero() && u.At.Sub(last) < 800*time.Millisecond {
			t.Errorf("edits %v apart", u.At.Sub(last))
		}
		last = u.At
		if strings.Contains(u.Text, "xoxb-test") {
			t.Errorf("an edit showed the credential")
		}
	}
	if strings.Contains(final.Text, "xoxb-test") || !strings.Contains(final.Text, "*status*") {
		t.Errorf("final text %q", final.Text)
	}
	t.Logf("%d intermediate edits", edits)
}

// BenchmarkStreamFirstWords measures, on the real service against the
// fakes, the time from the model's first streamed token to the first
// words of the reply in the thread (a 2-second reply).
func BenchmarkStreamFirstWords(b *testing.B) {
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		h := newHarness(b, testSoul)
		began := scriptStream(h, streamReply(), 20, 100*time.Millisecond)
		h.start()
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
		if _, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return strings.Contains(p.Text, "Done.") }); err != nil {
			b.Fatal(err)
		}
		total += h.slack.Streams()[0].At.Sub(began())
		if err := h.stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-first-words")
}
