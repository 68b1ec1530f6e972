package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway/slackio"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// What a crash left in the inbox is settled at the next start, each case
// its own way: a turn cut off is resumed with a line saying so; one that
// crashed the runtime twice is given up with a line saying that; one whose
// answer was being posted is read back from the thread: answered when the
// answer is there (no second answer, no line), resumed when it is not.
func TestStartSettlesWhatACrashLeft(t *testing.T) {
	h := newHarness(t, testSoul)
	st, err := store.Open(t.Context(), filepath.Join(h.home, "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	leave := func(id, ts, text, state string, attempts int) {
		t.Helper()
		ev := pipeline.Event{ID: id, Kind: pipeline.KindMessage, ChannelID: "D0MGR", ChannelType: pipeline.ChannelIM,
			UserID: "U0MGR", TS: ts, Text: text, Received: time.Now()}
		data, _ := json.Marshal(&ev)
		if _, err := st.InboxReceive(t.Context(), store.InboxEntry{EventID: id, Kind: "message", ChannelID: "D0MGR",
			ThreadTS: ts, UserID: "U0MGR", MsgKey: "D0MGR:" + ts, Event: data}); err != nil {
			t.Fatal(err)
		}
		for range attempts {
			if _, err := st.InboxStart(t.Context(), id, "trace-"+id); err != nil {
				t.Fatal(err)
			}
		}
		if state == store.InboxAnswering {
			if err := st.InboxAnswering(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	leave("EvCut", "201.1", "cut off", store.InboxRunning, 1)
	leave("EvPoison", "202.1", "poison", store.InboxRunning, 2)
	leave("EvLanded", "203.1", "landed", store.InboxAnswering, 1)
	leave("EvLost", "204.1", "lost", store.InboxAnswering, 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The answer to EvLanded reached the platform before the crash.
	client := slackio.NewClient(fake.DefaultBotToken, fake.DefaultAppToken, h.slack.URL(), nil)
	chat := slackio.NewChat(client, fake.DefaultBotToken, h.slack.URL(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "D0MGR", ThreadTS: "203.1", Text: "ack: landed", For: "EvLanded"}); err != nil {
		t.Fatal(err)
	}
	h.answerAll()
	h.start()
	h.expectNotice("D0MGR", "201.1", "): cut off")
	h.expectNotice("D0MGR", "204.1", "): lost")
	h.expectNotice("D0MGR", "202.1", inbox.MsgPoisoned)
	h.waitMetric(`agent_turns_total{outcome="ok"}`, 2)

	texts := func(thread string) []string {
		var out []string
		for _, p := range h.slack.Posts() {
			if p.Channel == "D0MGR" && p.ThreadTS == thread {
				out = append(out, p.Text)
			}
		}
		return out
	}
	for thread, want := range map[string]string{
		"201.1": inbox.MsgResumed + " | ack: <@U0MGR> (manager): cut off",
		"202.1": inbox.MsgPoisoned,
		"203.1": "ack: landed",
		"204.1": inbox.MsgResumed + " | ack: <@U0MGR> (manager): lost",
	} {
		if got := strings.Join(texts(thread), " | "); got != want {
			t.Errorf("thread %s: %q, want %q", thread, got, want)
		}
	}
	for _, r := range h.model.Requests() {
		if strings.Contains(r.LastUserText(), "landed") {
			t.Errorf("the answered event ran again")
		}
	}
	if _, m := h.get("/metrics"); !strings.Contains(m, `agent_inbox_events_total{outcome="poisoned"} 1`) ||
		!strings.Contains(m, `agent_inbox_events_total{outcome="resumed"} 2`) {
		t.Errorf("inbox metrics:\n%s", grepLines(m, "agent_inbox"))
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(t.Context(), filepath.Join(h.home, "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.InboxList(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, e := range all {
		states[e.EventID] = e.State
	}
	for id, want := range map[string]string{"EvCut": "answered", "EvPoison": "failed", "EvLanded": "answered", "EvLost": "answered"} {
		if states[id] != want {
			t.Errorf("%s is %s, want %s", id, states[id], want)
		}
	}
}
