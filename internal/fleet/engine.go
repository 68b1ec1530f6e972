package fleet

import (
	"context"
	"strings"

	"github.com/persona-runtime/agent/internal/commands"
)

// Engine is the engine's control surface for /abort with replicas
// (commands.Engine): a turn running at another replica is stopped there,
// through an announcement its Listen hears.
func (r *Replica) Engine(e commands.Engine) commands.Engine { return engine{Engine: e, r: r} }

type engine struct {
	commands.Engine
	r *Replica
}

// Abort stops the thread's turn here, or announces the stop to the
// replica whose turn holds the thread.
func (e engine) Abort(threadKey string) bool {
	if e.Engine.Abort(threadKey) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	busy, err := e.r.store.ThreadBusy(ctx, threadKey)
	if err != nil || !busy {
		return false
	}
	if err := e.r.store.Notify(ctx, abortTopic, abort{thread: threadKey}.payload()); err != nil {
		e.r.log.WarnContext(ctx, "fleet: /abort not announced", "thread", threadKey, "err", err)
		return false
	}
	return true
}

// AbortOwn stops the thread's turn here when userID started it, or, when
// it runs at another replica, announces the stop there once the inbox
// names userID as its starter; that replica checks again (abortAnnounced).
func (e engine) AbortOwn(threadKey, userID string) (stopped, running bool) {
	if stopped, running = e.Engine.AbortOwn(threadKey, userID); running {
		return stopped, running
	}
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	busy, err := e.r.store.ThreadBusy(ctx, threadKey)
	if err != nil || !busy {
		return false, false
	}
	channel, root, _ := strings.Cut(threadKey, ":")
	starter, ok, err := e.r.store.TurnStarter(ctx, channel, root)
	if err != nil {
		e.r.log.WarnContext(ctx, "fleet: /abort: the turn's starter not known", "thread", threadKey, "err", err)
	}
	if !ok || starter != userID {
		return false, true
	}
	if err := e.r.store.Notify(ctx, abortTopic, abort{thread: threadKey, user: userID}.payload()); err != nil {
		e.r.log.WarnContext(ctx, "fleet: /abort not announced", "thread", threadKey, "err", err)
		return false, true
	}
	return true, true
}
