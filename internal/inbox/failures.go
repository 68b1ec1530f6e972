package inbox

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// MsgStageFailed is the line a person gets when their message failed
// before the agent could work on it (the database failed in the drop,
// engagement, auth or session stage, even after its retries). It says
// "error", like every failure the runtime reports in a thread.
const MsgStageFailed = "Sorry — an error stopped me before I could work on this. Please try again in a moment; the operator has the details."

// MsgScheduleFailed is that line for a scheduled run, in its target: the
// pinned failure line of a run (interfaces.md, "Schedules").
const MsgScheduleFailed = pipeline.ScheduledFailedPrefix + "an error stopped it before it could start; the operator has the details"

// failedLineTimeout bounds the post of that line: the event's own
// context may be over (its timeout) by then.
const failedLineTimeout = 30 * time.Second

// tellFailed posts MsgStageFailed in the thread of a message or command
// that failed before the agent stage, when it was addressed to the
// persona.
func (r *Recorder) tellFailed(ctx context.Context, ev *pipeline.Event, err error) {
	stage := pipeline.FailedStage(err)
	if !addressed(ev, r.o.Self().UserID, stage) {
		r.o.Log.InfoContext(ctx, "failed event not told: it may not have been addressed to the persona",
			"event_id", ev.ID, "channel_id", ev.ChannelID, "stage", stage)
		return
	}
	// A channel mention arrives twice (app_mention and message), and both
	// fail alike when the store is down: one line for the two.
	if key := MsgKey(ev); key != "" && !r.told.first(key) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, failedLineTimeout)
	defer cancel()
	text := MsgStageFailed
	if ev.Kind == pipeline.KindSchedule {
		text = MsgScheduleFailed
	}
	if _, perr := r.o.Chat.Post(ctx, pipeline.Message{ChannelID: ev.ChannelID, ThreadTS: ev.RootTS(), Text: text, For: ev.ID}); perr != nil {
		r.o.Log.ErrorContext(ctx, "failure line not posted", "event_id", ev.ID, "channel_id", ev.ChannelID, "err", perr)
	}
}

// addressed reports whether ev was said to the persona, as far as is
// known without the store: a DM, a slash command, a scheduled run (the
// persona's own: its target awaits it), a message that mentions
// the bot, or one that had passed the engagement rules (its failure came
// after them). A plain reply in a channel thread whose drop or engagement
// check failed may have been chatter the bot is not part of: telling it
// would answer every thread in every channel while the database is down.
func addressed(ev *pipeline.Event, botUserID, stage string) bool {
	switch {
	case ev.Kind == pipeline.KindCommand, ev.Kind == pipeline.KindSchedule, ev.IsDM(), ev.Type == "app_mention":
		return true
	case botUserID != "" && (strings.Contains(ev.Text, "<@"+botUserID+">") || strings.Contains(ev.Text, "<@"+botUserID+"|")):
		return true
	}
	return stage != "" && stage != "drop" && stage != "engage"
}

// toldMax bounds the messages remembered as told: twins arrive within a
// second of each other, far fewer than this many failures apart.
const toldMax = 1024

// toldSet remembers the messages whose failure was told, the oldest
// forgotten first. The zero value is ready.
type toldSet struct {
	mu    sync.Mutex
	keys  map[string]bool
	order []string
}

// first records key and reports whether it was not there yet.
func (t *toldSet) first(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys[key] {
		return false
	}
	if t.keys == nil {
		t.keys = map[string]bool{}
	}
	if len(t.order) >= toldMax {
		delete(t.keys, t.order[0])
		t.order = t.order[1:]
	}
	t.keys[key] = true
	t.order = append(t.order, key)
	return true
}
