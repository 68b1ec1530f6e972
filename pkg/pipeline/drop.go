package pipeline

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Roster answers who may talk to the persona and where. *persona.Persona
// implements it; every method is cheap and allocation-free because it runs on
// the drop path of every event.
type Roster interface {
	// Layer is the trust layer of a channel (LayerDM for direct messages).
	Layer(channelID string, isDM bool) Layer
	// IsManager reports whether userID is the manager or the backup manager.
	IsManager(userID string) bool
	// IsBlocked reports whether userID is on the blocked list.
	IsBlocked(userID string) bool
	// DMOpen reports whether anyone may DM the persona (both channel lists
	// are empty); otherwise only the managers may.
	DMOpen() bool
}

// SeenStore remembers the events already handled, so that a redelivery is
// caught even after a restart.
type SeenStore interface {
	// EventSeen reports whether key was marked; it does not write.
	EventSeen(ctx context.Context, key string) (bool, error)
	// MarkEvent records key; fresh is false when it was already there.
	MarkEvent(ctx context.Context, key string) (fresh bool, err error)
}

// ThreadLocks tells whether a thread is locked by /1on1.
type ThreadLocks interface {
	// ThreadLock returns the user a thread is locked to, or "" when it is
	// not locked.
	ThreadLock(ctx context.Context, threadKey string) (string, error)
}

// Mutes tells whether a person or a thread is muted (/ignore,
// /ignore-thread). *store.Store implements it.
type Mutes interface {
	// Muted reports whether a message from userID in the thread is muted
	// now: the person is (user), or the thread or its channel is (thread).
	Muted(ctx context.Context, userID, threadKey, channelKey string) (user, thread bool, err error)
}

// DropCounter gives the counter of each drop reason, asked for once per
// reason when the stage is built (*metrics.Metrics).
type DropCounter interface {
	Dropped(reason string) Counter
}

// DropDeps are the dependencies of the drop filter.
type DropDeps struct {
	Roster Roster
	Seen   SeenStore
	Locks  ThreadLocks // optional
	Mutes  Mutes       // optional
	// Self returns the bot's own identity (known after auth.test).
	Self func() Identity
	// Drops is agent_chat_drops_total{reason}.
	Drops DropCounter
	Log   *slog.Logger
	// OnDrop, when set, is told of every drop (the simulator's expect_drop).
	OnDrop func(ev *Event, reason string)
	// Peers admits the messages of other personas that mention this one,
	// within the stored bounds (peers.go); nil drops every bot's message.
	Peers *Peers
}

// userSubtypes are the message subtypes that carry a person's words; every
// other subtype (edits, deletions, joins, topic changes, ...) is ignored.
var userSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true, "me_message": true}

// DropIgnored is the drop reason of a muted person's or thread's words
// (/ignore, /ignore-thread: pinned, interfaces.md); DropNotSpeech of
// events that are not a person speaking (edits, deletions, joins, an
// event without a user). Both are exported at 0 like the others.
const (
	DropIgnored   = "ignored"
	DropNotSpeech = "not_speech"
)

// MoreDropReasons are the drop reasons beyond the pinned DropReasons.
var MoreDropReasons = []string{DropIgnored, DropNotSpeech, DropPeerLimit}

// NewDrop returns the drop filter, the first stage: it stops, before any
// store write or model call, everything the persona must not see: the bot's
// own and other bots' messages, blocked users, senders (and clickers) the
// trust layer does not admit, DMs and clicks in DMs from non-managers when
// the persona has channel lists, threads locked by /1on1 to someone else,
// and redelivered events. Each drop
// increments agent_chat_drops_total{reason} and logs one debug line; nothing
// is posted to the sender.
func NewDrop(tracer trace.Tracer, m StageMetrics, d DropDeps) Middleware {
	if d.Roster == nil || d.Seen == nil || d.Self == nil || d.Drops == nil || d.Log == nil {
		panic("pipeline: NewDrop needs Roster, Seen, Self, Drops and Log")
	}
	counters := map[string]Counter{}
	for _, r := range append(slices.Clone(DropReasons), MoreDropReasons...) {
		counters[r] = d.Drops.Dropped(r)
	}
	dedupe := newRecent(4096)
	return newStage("drop", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		reason, err := dropReason(ctx, d, dedupe, ev)
		if err != nil {
			return OutcomeError, "", err
		}
		if reason != "" {
			counters[reason].Inc()
			if d.OnDrop != nil {
				d.OnDrop(ev, reason)
			}
			if d.Log.Enabled(ctx, slog.LevelDebug) {
				d.Log.DebugContext(ctx, "event dropped", "reason", reason, "event_id", ev.ID,
					"kind", ev.Kind.String(), "channel_id", ev.ChannelID, "user_id", ev.UserID)
			}
			return OutcomeDrop, reason, nil
		}
		return OutcomePass, "", next.Handle(ctx, ev)
	})
}

// dropReason decides; "" lets the event through. The checks that need no I/O
// come first, so that most drops cost nothing; the redelivery check reads the
// store and only an event that passes is written down.
func dropReason(ctx context.Context, d DropDeps, dedupe *recent, ev *Event) (string, error) {
	ev.Peer = false // the stage decides it again, for a resumed event too
	if ev.Kind == KindMessage {
		self := d.Self()
		if ev.BotID != "" || ev.Subtype == "bot_message" || (self.UserID != "" && ev.UserID == self.UserID) {
			if !d.Peers.admits(ev, self) {
				return DropSelf, nil
			}
			ev.Peer = true
		}
		if !userSubtypes[ev.Subtype] {
			return DropNotSpeech, nil
		}
	}
	if ev.UserID == "" && ev.Kind != KindReply {
		return DropNotSpeech, nil
	}
	// A scheduled run is the runtime's own event, made by its creator
	// earlier: whether its creator may still have it run is the schedule
	// gate's (after auth), which pauses it and tells the manager rather
	// than dropping it silently at every due time. Only a second copy of
	// one due time (a redelivery) stops here.
	if ev.Kind == KindSchedule {
		return checkDuplicate(ctx, d.Seen, dedupe, ev)
	}
	if d.Roster.IsBlocked(ev.UserID) {
		return DropBlocked, nil
	}
	// Clicks pass the same trust layers as words: a card or a feedback
	// button is clicked only by someone who may speak where it is (the
	// approval gate then judges who may decide what). Were they exempt, a
	// person the channel does not admit could still vote on replies or
	// decide cards there.
	dm := ev.IsDM()
	layer := d.Roster.Layer(ev.ChannelID, dm)
	manager := d.Roster.IsManager(ev.UserID)
	if reason := LayerRefuses(d.Roster, layer, ev.UserID); reason != "" {
		return reason, nil
	}
	// A /1on1 lock holds the thread's words; a click on a card there
	// (the manager's approver deciding it) is not words.
	if d.Locks != nil && ev.Kind == KindMessage && !manager {
		owner, err := d.Locks.ThreadLock(ctx, ev.ThreadKey())
		if err != nil {
			return "", err
		}
		if owner != "" && owner != ev.UserID {
			return DropOneOnOne, nil
		}
	}
	// Mutes never apply to the manager or the backup (pinned,
	// interfaces.md): an approver's /ignore-thread would silence them.
	if d.Mutes != nil && !manager && (ev.Kind == KindMessage || ev.Kind == KindCommand) {
		muted, err := mutedHere(ctx, d, ev)
		if err != nil || muted {
			return DropIgnored, err
		}
	}
	reason, err := checkDuplicate(ctx, d.Seen, dedupe, ev)
	if reason != "" || err != nil {
		return reason, err
	}
	if ev.Peer {
		if ev.Resumed {
			return "", nil // its first run counted it
		}
		return d.Peers.take(ctx, d.Log, ev)
	}
	return "", d.Peers.personSpoke(ctx, ev)
}

// mutedHere reports whether ev's words, not a manager's, are muted
// (/ignore, /ignore-thread), before any model call. /unignore and
// /unignore-thread pass a thread's mute, or the thread would stay muted
// for good (the command lifting it is typed in it); a muted person's own
// /unignore does not, so that a muted person cannot make the persona
// answer (the command's role check refuses them anyway).
func mutedHere(ctx context.Context, d DropDeps, ev *Event) (bool, error) {
	user, thread, err := d.Mutes.Muted(ctx, ev.UserID, ev.ThreadKey(), ThreadKey(ev.ChannelID, ""))
	if err != nil || !user && !thread {
		return false, err
	}
	var name string
	switch {
	case ev.Kind == KindCommand && ev.Command != nil:
		name = strings.ToLower(ev.Command.Name)
	case ev.Kind == KindMessage:
		cmd, _ := ParseCommand(ev.Text, d.Self().UserID)
		name = cmd.Name
	}
	if name != "/unignore" && name != "/unignore-thread" {
		return true, nil
	}
	return user, nil
}

// LayerRefuses is the drop reason when the trust layer of a channel does
// not admit userID, "" when it does: a DM from anyone but the managers
// when the persona has channel lists (DropDM), a restricted channel to
// anyone but the managers (DropWhitelist). The schedule gate asks it of a
// run's creator at every run.
func LayerRefuses(r Roster, layer Layer, userID string) string {
	manager := r.IsManager(userID)
	switch {
	case layer == LayerDM && !manager && !r.DMOpen():
		return DropDM
	case layer == LayerRestricted && !manager:
		return DropWhitelist
	}
	return ""
}

// dedupeKeys are the keys an event is known by: its event id and, for
// messages, channel+ts (a channel mention arrives as app_mention and as
// message with different event ids).
func dedupeKeys(ev *Event) (idKey, tsKey string) {
	if ev.ID != "" {
		idKey = "id:" + ev.ID
	}
	if ev.Kind == KindMessage && ev.TS != "" {
		tsKey = "ts:" + ev.ChannelID + ":" + ev.TS
	}
	return idKey, tsKey
}

// DedupeKey is the key the store remembers ev by: channel+ts for a
// message (it also catches a redelivery, which keeps channel and ts), the
// event id for everything else; "" for neither.
func DedupeKey(ev *Event) string {
	idKey, tsKey := dedupeKeys(ev)
	if tsKey != "" {
		return tsKey
	}
	return idKey
}

// checkDuplicate keeps both keys in memory but one in the store: channel+ts
// for messages (it also catches a redelivery, which keeps channel and ts),
// the event id for everything else. One key means one read and one write,
// and no half-marked state when the write fails.
func checkDuplicate(ctx context.Context, seen SeenStore, dedupe *recent, ev *Event) (string, error) {
	idKey, tsKey := dedupeKeys(ev)
	var keys []string
	for _, k := range [2]string{idKey, tsKey} {
		if k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", nil
	}
	// The inbox recorded it before: the first copy runs, wherever it is.
	if ev.Redelivery {
		return DropDuplicate, nil
	}
	// In memory first: concurrent deliveries of one event in this process.
	if !dedupe.addAll(keys) {
		return DropDuplicate, nil
	}
	// A resumed event was marked by its first run: it is run again on
	// purpose, and the inbox has settled which of its twins (a mention
	// arrives twice) runs.
	if ev.Resumed {
		return "", nil
	}
	// The inbox marked it as it received the event, in the same write.
	if ev.Marked {
		if !ev.Fresh {
			return DropDuplicate, nil
		}
		return "", nil
	}
	key := DedupeKey(ev)
	// Then the store, read only: a redelivery after a restart.
	ok, err := seen.EventSeen(ctx, key)
	if err != nil {
		dedupe.removeAll(keys)
		return "", err
	}
	if ok {
		return DropDuplicate, nil
	}
	fresh, err := seen.MarkEvent(ctx, key)
	if err != nil {
		dedupe.removeAll(keys)
		return "", err
	}
	if !fresh {
		return DropDuplicate, nil
	}
	return "", nil
}

// mentions returns the user ids mentioned in text as <@U…> or <@U…|name>.
func mentions(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "<@")
		if i < 0 {
			return out
		}
		text = text[i+2:]
		j := strings.IndexAny(text, ">|")
		if j <= 0 {
			return out
		}
		out = append(out, text[:j])
		text = text[j:]
	}
}
