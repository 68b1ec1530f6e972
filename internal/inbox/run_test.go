package inbox

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The inbox walks each event it keeps to its end: received before the
// handler sees it, running from its first write, answering just before
// its first post and answered with the write after it (not at the end of
// the turn), failed with its error, dropped when it never reached the
// agent; clicks and the bot's own events are not kept, a redelivered copy
// does not touch the first one's record, and a resumed event is not
// received twice.
func TestRecorderFollowsEachEventToItsEnd(t *testing.T) {
	f := newFixture(t, nil)
	state := func(id string) string {
		e := f.row(t, id)
		if e.Attempts > 0 {
			return e.State + "/" + string(rune('0'+e.Attempts))
		}
		return e.State
	}
	var during []string
	answer := func(ctx context.Context, p *pipeline.Progress) error {
		p.Reach()
		during = append(during, "before the post: "+state("E1"))
		p.Answering()
		during = append(during, "posting: "+state("E1"))
		p.Answer()
		// The posting tool's result: the event's next write.
		if err := f.st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		during = append(during, "posted: "+state("E1")) // the turn goes on after its answer
		return nil
	}
	reached := func(err error) func(context.Context, *pipeline.Progress) error {
		return func(_ context.Context, p *pipeline.Progress) error {
			p.Reach()
			return err
		}
	}
	drop := func(_ context.Context, p *pipeline.Progress) error { return nil }
	noProgress := func(_ context.Context, p *pipeline.Progress) error {
		if p != nil {
			t.Error("an event the inbox does not keep has a Progress")
		}
		return nil
	}

	f.run(t, message("E1", "D1", "1.1", "answer"), false, answer)
	if want := []string{"before the post: received", "posting: answering/1", "posted: answered/1"}; !slices.Equal(during, want) {
		t.Errorf("E1 was %q, want %q", during, want)
	}
	if f.run(t, message("E1", "D1", "1.1", "answer"), false, noProgress) {
		t.Error("a redelivered copy is fresh")
	}
	f.run(t, message("E2", "D1", "2.1", "fail"), false, reached(errors.New("model down")))
	f.run(t, message("E3", "D1", "3.1", "silent"), false, reached(nil))
	f.run(t, message("E4", "D1", "4.1", "drop"), false, drop)
	click := &pipeline.Event{ID: "E5", Kind: pipeline.KindAction, ChannelID: "D1"}
	f.run(t, click, false, noProgress)
	bot := message("E6", "D1", "6.1", "drop")
	bot.BotID = "B1"
	f.run(t, bot, false, noProgress)
	// E7 was recorded by an earlier run, which stopped before it ran.
	if _, err := f.r.Receive(t.Context(), message("E7", "D1", "7.1", "silent")); err != nil {
		t.Fatal(err)
	}
	resumed := message("E7", "D1", "7.1", "silent")
	resumed.Resumed = true
	if !f.run(t, resumed, false, reached(nil)) {
		t.Error("a resumed event was received again")
	}

	for id, want := range map[string]string{
		"E1": "answered/1",
		"E2": "failed/1",
		"E3": "answered/1",
		"E4": "dropped/1",
		"E5": "",
		"E6": "",
		"E7": "answered/1",
	} {
		if got := state(id); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got := f.row(t, "E2").Error; got != "model down" {
		t.Errorf("E2's error: %q", got)
	}
	for outcome, want := range map[string]int{"answered": 3, "failed": 1, "dropped": 1} {
		if got := f.count(outcome); got != want {
			t.Errorf("%s events: %d, want %d", outcome, got, want)
		}
	}
	if said := f.chat.said(); len(said) != 0 {
		t.Errorf("the inbox said %q", said)
	}
}

// A run cut short by shutdown is left unfinished: the next start resumes
// it.
func TestRecorderLeavesAHaltedRunUnfinished(t *testing.T) {
	f := newFixture(t, nil)
	f.run(t, message("E1", "D1", "1.1", "long"), true, func(ctx context.Context, p *pipeline.Progress) error {
		p.Reach()
		return &pipeline.StageError{Stage: "agent", Err: context.Canceled}
	})
	un, err := f.st.InboxUnfinished(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(un) != 1 || un[0].EventID != "E1" {
		t.Errorf("unfinished: %+v, want E1", un)
	}
	if said := f.chat.said(); len(said) != 0 {
		t.Errorf("the inbox said %q", said)
	}
}

// An event that fails before it reaches the agent stage is told in its
// thread (once, before it is recorded failed); one that failed in the
// agent stage (which apologises itself), a drop, and an event cut short
// by shutdown are not. A mention's two events are told once.
func TestRecorderTellsFailuresBeforeTheAgent(t *testing.T) {
	f := newFixture(t, nil)
	var before []string
	f.chat.before = func(m pipeline.Message) { before = append(before, m.For+": "+f.row(t, m.For).State) }
	storeDown := &pipeline.StageError{Stage: "engage", Err: errors.New("database is locked")}
	f.run(t, message("E1", "D1", "1.1", "stage"), false, func(context.Context, *pipeline.Progress) error { return storeDown })
	f.run(t, message("E2", "D1", "2.1", "agent"), false, func(_ context.Context, p *pipeline.Progress) error {
		p.Reach()
		return errors.New("model down")
	})
	f.run(t, message("E3", "D1", "3.1", "drop"), false, func(context.Context, *pipeline.Progress) error { return nil })
	f.run(t, message("E4", "D1", "4.1", "shutdown"), true, func(context.Context, *pipeline.Progress) error {
		return &pipeline.StageError{Stage: "session", Err: context.Canceled}
	})
	// A channel mention, as a message and as an app_mention.
	f.run(t, message("E5", "C1", "5.1", "<@U0BOT> hi"), false, func(context.Context, *pipeline.Progress) error { return storeDown })
	twin := message("E6", "C1", "5.1", "<@U0BOT> hi")
	twin.Type = "app_mention"
	f.run(t, twin, false, func(context.Context, *pipeline.Progress) error { return storeDown })

	if want := []string{"D1:1.1: " + MsgStageFailed, "C1:5.1: " + MsgStageFailed}; !slices.Equal(f.chat.said(), want) {
		t.Errorf("said %q, want %q", f.chat.said(), want)
	}
	if want := []string{"E1: received", "E5: received"}; !slices.Equal(before, want) {
		t.Errorf("told while %q, want %q", before, want)
	}
	for id, want := range map[string]string{"E1": store.InboxFailed, "E5": store.InboxFailed, "E6": store.InboxFailed} {
		if e := f.row(t, id); e.State != want || e.Error != "engage: database is locked" {
			t.Errorf("%s: %s (%s), want %s", id, e.State, e.Error, want)
		}
	}
}
