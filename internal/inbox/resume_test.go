package inbox

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// leave records ev as an earlier run left it, a millisecond after the
// last: started attempts times, and answering when it was posting its
// answer.
func (f *fixture) leave(t *testing.T, ev *pipeline.Event, attempts int, answering bool) {
	t.Helper()
	f.now = f.now.Add(time.Millisecond)
	if _, err := f.r.Receive(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	for range attempts {
		if _, err := f.st.InboxStart(t.Context(), ev.ID, "trace-"+ev.ID); err != nil {
			t.Fatal(err)
		}
	}
	if answering {
		if err := f.st.InboxAnswering(t.Context(), ev.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// resume resumes what is unfinished and returns the ids delivered.
func (f *fixture) resume(t *testing.T, since time.Time) []string {
	t.Helper()
	var ran []string
	f.r.ResumeUnfinished(t.Context(), since, func(ev *pipeline.Event) {
		if !ev.Resumed {
			t.Errorf("%s delivered without Resumed", ev.ID)
		}
		ran = append(ran, ev.ID)
	})
	return ran
}

// What a stop left unfinished is settled at the next start, each case its
// own way: a turn cut off runs again with a line saying so; one that never
// started just runs; one that crashed the runtime twice is given up with a
// line saying that; one whose answer was being posted is read back from
// the thread: answered when the answer is there (no second answer, no
// line), run again when it is not. Of a mention's two events one runs, and
// none when the other was answered.
func TestResumeSettlesWhatAStopLeft(t *testing.T) {
	c := &readBackChat{landed: map[string]bool{"EvLanded": true}}
	f := newFixture(t, c)
	f.leave(t, message("EvCut", "D1", "201.1", "cut off"), 1, false)
	f.leave(t, message("EvQueued", "D1", "202.1", "queued"), 0, false)
	f.leave(t, message("EvPoison", "D1", "203.1", "poison"), 2, false)
	f.leave(t, message("EvLanded", "D1", "204.1", "landed"), 1, true)
	f.leave(t, message("EvLost", "D1", "205.1", "lost"), 1, true)
	f.leave(t, message("EvTwin1", "C1", "206.1", "<@U0BOT> twice"), 1, false)
	f.leave(t, message("EvTwin2", "C1", "206.1", "<@U0BOT> twice"), 0, false)
	f.leave(t, message("EvDone1", "C1", "207.1", "<@U0BOT> answered"), 0, false)
	if err := f.st.InboxFinish(t.Context(), "EvDone1", store.InboxAnswered, ""); err != nil {
		t.Fatal(err)
	}
	f.leave(t, message("EvDone2", "C1", "207.1", "<@U0BOT> answered"), 0, false)
	ran := f.resume(t, f.now.Add(time.Millisecond))
	if want := []string{"EvCut", "EvQueued", "EvLost", "EvTwin1"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
	if want := []string{
		"D1:201.1: " + MsgResumed,
		"D1:203.1: " + MsgPoisoned,
		"D1:205.1: " + MsgResumed,
		"C1:206.1: " + MsgResumed,
	}; !slices.Equal(c.said(), want) {
		t.Errorf("said %q, want %q", c.said(), want)
	}
	for id, want := range map[string]string{
		"EvPoison": store.InboxFailed, "EvLanded": store.InboxAnswered, "EvTwin2": store.InboxDropped, "EvDone2": store.InboxDropped,
		"EvCut": store.InboxRunning, "EvQueued": store.InboxReceived, "EvLost": store.InboxAnswering,
	} {
		if got := f.row(t, id).State; got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	if e := f.row(t, "EvPoison"); !strings.Contains(e.Error, "crashed during 2 runs (last trace trace-EvPoison)") {
		t.Errorf("the poisoned event's error: %q", e.Error)
	}
	if got := f.count("poisoned"); got != 1 {
		t.Errorf("poisoned: %d, want 1", got)
	}
	if got := f.count("resumed"); got != 4 {
		t.Errorf("resumed: %d, want 4", got)
	}
}

// The poison line is tagged with its event: a stop between posting it and
// settling the event leaves it unfinished, and the next start, finding
// the line in the thread, settles it without saying it twice.
func TestResumePoisonLineSaidOnce(t *testing.T) {
	c := &readBackChat{landed: map[string]bool{}}
	c.before = func(m pipeline.Message) {
		if m.Text == MsgPoisoned && m.For != "EvPoison" {
			t.Errorf("the poison line is not tagged with its event: %+v", m)
		}
	}
	f := newFixture(t, c)
	f.leave(t, message("EvPoison", "D1", "203.1", "poison"), 2, false)
	c.landed["EvPoison"] = true // posted by the run that stopped before settling it
	f.resume(t, f.now.Add(time.Millisecond))
	if got := c.said(); len(got) != 0 {
		t.Errorf("said %q, want nothing: the line is in the thread", got)
	}
	if got := f.row(t, "EvPoison").State; got != store.InboxFailed {
		t.Errorf("EvPoison is %s, want %s", got, store.InboxFailed)
	}
}

// Where the thread cannot be read back, an event stopped while posting
// its answer is not run again (it could answer twice): its thread is told
// to ask again, and it is answered.
func TestResumeWithoutReadBack(t *testing.T) {
	for name, c := range map[string]Chat{
		"no read back":     &chat{},
		"read back failed": &readBackChat{err: errors.New("conversations.replies: ratelimited")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, c)
			f.leave(t, message("Ev1", "D1", "1.1", "posting"), 1, true)
			if ran := f.resume(t, f.now.Add(time.Millisecond)); len(ran) != 0 {
				t.Errorf("ran %q", ran)
			}
			said := c.(interface{ said() []string }).said()
			if want := []string{"D1:1.1: " + MsgMaybeAnswered}; !slices.Equal(said, want) {
				t.Errorf("said %q, want %q", said, want)
			}
			if got := f.row(t, "Ev1").State; got != store.InboxAnswered {
				t.Errorf("Ev1 is %s", got)
			}
		})
	}
}

// The events this run received are its own: only those an earlier run
// received are resumed; one not decodable is given up.
func TestResumeUnfinishedSkipsThisRunsEvents(t *testing.T) {
	f := newFixture(t, nil)
	f.leave(t, message("EvOld", "D1", "1.1", "old"), 1, false)
	if _, err := f.st.InboxReceive(t.Context(), store.InboxEntry{EventID: "EvBad", Kind: "message", ChannelID: "D1",
		ThreadTS: "2.1", Event: json.RawMessage(`{"kind": []}`)}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Second) // this run starts
	since := f.now
	f.leave(t, message("EvNew", "D1", "3.1", "new"), 0, false)
	if ran := f.resume(t, since); !slices.Equal(ran, []string{"EvOld"}) {
		t.Errorf("ran %q, want EvOld only", ran)
	}
	if e := f.row(t, "EvBad"); e.State != store.InboxFailed || !strings.HasPrefix(e.Error, "not decodable: ") {
		t.Errorf("EvBad: %s (%s)", e.State, e.Error)
	}
	if got := f.row(t, "EvNew").State; got != store.InboxReceived {
		t.Errorf("EvNew is %s", got)
	}
}
