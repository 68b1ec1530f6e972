package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The announcements' channels (Postgres NOTIFY channels) and payloads:
//
//   - approvalTopic: the id of an approval just decided; the replica whose
//     turn waits for it wakes it (Approval);
//   - abortTopic: "<thread key>" to stop the thread's turn, or
//     "<thread key>\n<user id>" to stop it only when that person started it
//     (abort).
const (
	approvalTopic = "agent_approvals"
	abortTopic    = "agent_abort"
)

// errBadPayload is the error of a payload that is not an announcement.
var errBadPayload = errors.New("fleet: bad announcement payload")

// abort is the announcement of an /abort typed at another replica: stop
// the thread's turn (user empty), or only when user started it.
type abort struct {
	thread string // the thread's key, "<channel>:<root ts>"
	user   string
}

// payload is a's wire form.
func (a abort) payload() string {
	if a.user == "" {
		return a.thread
	}
	return a.thread + "\n" + a.user
}

// parseAbort reads an abort announcement: a thread key ("<channel>:<root
// ts>"), and after a line break a user id.
func parseAbort(payload string) (abort, error) {
	thread, user, own := strings.Cut(payload, "\n")
	channel, _, ok := strings.Cut(thread, ":")
	switch {
	case !ok || channel == "" || strings.ContainsAny(thread, " \t\r"):
		return abort{}, fmt.Errorf("%w: %q: no thread key", errBadPayload, payload)
	case own && (user == "" || strings.ContainsAny(user, " \t\r\n")):
		return abort{}, fmt.Errorf("%w: %q: a bad user id", errBadPayload, payload)
	}
	return abort{thread: thread, user: user}, nil
}

// parseApproval reads an approval announcement: the approval's id.
func parseApproval(payload string) (string, error) {
	if payload == "" || strings.ContainsAny(payload, " \t\r\n") {
		return "", fmt.Errorf("%w: %q: not an approval id", errBadPayload, payload)
	}
	return payload, nil
}

// AnnounceApproval tells the other replicas that approval id was decided
// (the approval gate's Notify).
func (r *Replica) AnnounceApproval(ctx context.Context, id string) error {
	if _, err := parseApproval(id); err != nil {
		return fmt.Errorf("announce approval: %w", err)
	}
	if err := r.store.Notify(ctx, approvalTopic, id); err != nil {
		return fmt.Errorf("announce approval: %w", err)
	}
	return nil
}

// Waker wakes the turn waiting for an approval decided at another replica
// (the approval gate).
type Waker interface {
	Wake(ctx context.Context, id string)
}

// Aborter stops the turns running here (the engine).
type Aborter interface {
	Abort(threadKey string) bool
	AbortOwn(threadKey, userID string) (stopped, running bool)
}

// Listen carries the other replicas' announcements until ctx is done:
// decisions on cards whose turns wait here (gate), and /abort of turns
// running here (engine, this replica's own). When the connection fails it
// listens again a moment later; pending cards are read back meanwhile
// (ApprovalPoll).
func (r *Replica) Listen(ctx context.Context, gate Waker, engine Aborter) {
	for ctx.Err() == nil {
		err := r.store.Listen(ctx, func(channel, payload string) {
			r.heard(ctx, gate, engine, channel, payload)
		}, approvalTopic, abortTopic)
		if err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "fleet: announcements not heard; listening again", "err", err)
			_ = r.sleep(ctx, relisten)
		}
	}
}

// heard acts on one announcement.
func (r *Replica) heard(ctx context.Context, gate Waker, engine Aborter, channel, payload string) {
	switch channel {
	case approvalTopic:
		id, err := parseApproval(payload)
		if err != nil {
			r.log.WarnContext(ctx, "fleet: announcement ignored", "channel", channel, "err", err)
			return
		}
		gate.Wake(ctx, id)
	case abortTopic:
		a, err := parseAbort(payload)
		if err != nil {
			r.log.WarnContext(ctx, "fleet: announcement ignored", "channel", channel, "err", err)
			return
		}
		if abortAnnounced(engine, a) {
			r.log.InfoContext(ctx, "fleet: stopped a turn at another replica's /abort", "thread", payload)
		}
	}
}

// abortAnnounced stops the turn another replica's /abort names: the
// thread's, or only when the named person started it.
func abortAnnounced(engine Aborter, a abort) bool {
	if a.user == "" {
		return engine.Abort(a.thread)
	}
	stopped, _ := engine.AbortOwn(a.thread, a.user)
	return stopped
}
