package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// sessionView is what one turn shows of itself on the platform's agent
// surface: the thread's agent session, processing while the turn runs
// (the person then has the platform's stop button), suspended while it
// waits for a card, active once it answered. Where the platform refuses
// agent sessions, the turn shows the assistant status line instead, as
// before them ("is thinking…" in DMs).
//
// The first update goes out beside the turn's first model call; every
// later one waits for it, so that the platform sees them in order (an
// active overtaken by its processing would leave the stop button up).
// The last one (active) goes out beside the turn's end, after the reply:
// the turn does not wait for it; the thread's next turn does before its
// first update (after), and so does what waits for the turn's end
// (Engine.Ended closes once settled is).
type sessionView struct {
	e     *Engine
	t     *pipeline.Turn
	first chan struct{} // closed once the first update is done
	// settled is closed once the last update is done (finish).
	settled chan struct{}

	// on: the platform takes the session's updates (read after first).
	on bool
	// tasks shows a card's wait as a task (tasks.go).
	tasks *taskView

	// finishing: finish was called (not under mu, which the last update
	// holds while it goes out).
	finishing atomic.Bool

	mu       sync.Mutex // orders the updates after the first
	waits    int        // cards the turn waits for
	finished bool       // the last update is done
}

var _ pipeline.Suspender = (*sessionView)(nil)

// startView sends the turn's first update in the background: processing,
// with a title when the session is new (created), or the status line.
// On a new DM thread the persona's prompts are offered too. after, when
// not nil, is closed once the thread's previous turn has settled its
// session (its active sent): the first update waits for it.
func (e *Engine) startView(ctx context.Context, t *pipeline.Turn, created bool, after <-chan struct{}) *sessionView {
	v := &sessionView{e: e, t: t, first: make(chan struct{}), settled: make(chan struct{})}
	dmThread := created && t.Event.IsDM() && e.o.NewDMThread != nil
	if e.o.Sessions == nil && (e.o.Status == nil || !t.Event.IsDM()) && !dmThread {
		close(v.first)
		return v
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		if after != nil {
			<-after
		}
		v.begin(ctx, created)
		close(v.first)
		if dmThread {
			e.o.NewDMThread(ctx, t.Event.ChannelID)
		}
	}()
	return v
}

// begin is the first update.
func (v *sessionView) begin(ctx context.Context, created bool) {
	if v.e.o.Sessions != nil {
		u := v.update(pipeline.SessionProcessing)
		if created {
			u.Title, u.Initiator = v.e.title(v.t), v.t.Event.UserID
		}
		err := v.e.o.Sessions(ctx, u)
		if !errors.Is(err, pipeline.ErrNoAgentSessions) {
			// A failure of this thread only (or none): the later updates
			// are still tried, the status line is not needed.
			if err != nil {
				v.e.o.Log.DebugContext(ctx, "set agent session status", "status", u.Status, "err", err)
			}
			v.on = true
			return
		}
	}
	v.e.status(ctx, v.t, "is thinking…")
}

func (v *sessionView) update(s pipeline.SessionStatus) pipeline.SessionUpdate {
	return pipeline.SessionUpdate{ChannelID: v.t.Event.ChannelID, ThreadTS: v.t.Event.RootTS(), Status: s}
}

// shown waits for the first update (safe to call more than once): nothing
// the turn shows in the thread may precede it.
func (v *sessionView) shown() {
	select {
	case <-v.first:
	default:
		v.e.waiting(waitStatus)
		<-v.first
	}
}

// setLocked sends an update after the first; v.mu is held.
func (v *sessionView) setLocked(ctx context.Context, s pipeline.SessionStatus) {
	if !v.on || v.finished {
		return
	}
	if err := v.e.o.Sessions(ctx, v.update(s)); err != nil {
		v.e.o.Log.DebugContext(ctx, "set agent session status", "status", s, "err", err)
	}
}

// Suspend shows the session suspended while the turn waits for a person
// (approval.Gate); resume shows it processing again once the turn goes
// on. With several cards waiting at once, the session is suspended from
// the first wait to the end of the last.
func (v *sessionView) Suspend(ctx context.Context) (resume func(ctx context.Context)) {
	v.shown()
	done := v.tasks.wait(ctx)
	v.mu.Lock()
	v.waits++
	if v.waits == 1 {
		v.setLocked(ctx, pipeline.SessionSuspended)
	}
	v.mu.Unlock()
	var once sync.Once
	return func(ctx context.Context) {
		once.Do(func() {
			done(ctx)
			v.mu.Lock()
			defer v.mu.Unlock()
			v.waits--
			if v.waits == 0 && ctx.Err() == nil {
				v.setLocked(ctx, pipeline.SessionProcessing)
			}
		})
	}
}

// finish shows the session active: the turn answered, failed or was
// stopped (the platform leaves a stopped session processing until the app
// moves it). The update goes out beside the turn, after the first (the
// turn's reply is posted by then: nothing waits for it on the reply's
// path), even when the turn's context is over; settled is closed once it
// is done. Only the first call does anything.
func (v *sessionView) finish(ctx context.Context) {
	if !v.finishing.CompareAndSwap(false, true) {
		return
	}
	if v.e.o.Sessions == nil { // no update to send: the status line has none
		close(v.settled)
		return
	}
	ctx = context.WithoutCancel(ctx)
	v.e.beside(func() {
		<-v.first
		v.mu.Lock()
		v.setLocked(ctx, pipeline.SessionActive)
		v.finished = true
		v.mu.Unlock()
		close(v.settled)
	})
}

// maxTitle is the longest session title the turn gives (in runes): a
// line the agent view can show whole; the platform takes up to 200.
const maxTitle = 80

// title names a new session after the words that started it: the first
// line of the person's message, without the bot's mention, redacted as
// the model reads it, cut at a word; "" when there are no words (a file
// alone).
func (e *Engine) title(t *pipeline.Turn) string {
	words := strings.TrimSpace(pipeline.StripMention(t.Event.Text, e.o.Self().UserID))
	line, _, _ := strings.Cut(words, "\n")
	line = strings.Join(strings.Fields(e.o.Redact(line)), " ")
	r := []rune(line)
	if len(r) <= maxTitle {
		return line
	}
	cut := maxTitle - 1
	for i := cut; i > maxTitle/2; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(r[:cut]), unicode.IsSpace) + "…"
}
