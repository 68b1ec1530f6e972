package pipeline

import (
	"context"
	"log/slog"
	"slices"
)

// A team of personas (interfaces.md): the other personas of "## Peers"
// are heard when, and only when, a message of theirs mentions this
// persona; never because the thread is engaged, never by a mark kept per
// thread. Such a message reaches the model with the envelope role peer
// (RolePeer, set by the auth stage from Event.Peer) and is bounded: at
// most Max peer-admitted turns in a thread between two messages of
// people, at most PeerTurnsPerHour in an hour, counted in the store so
// that replicas and restarts share the counts. Past a bound the message is
// dropped with DropPeerLimit.

// RolePeer is the role of another persona's message admitted by its
// mention: below every person's role, it may ask for work but decides
// nothing (no approval, command, schedule, persona-wide memory).
const RolePeer Role = "peer"

// DropPeerLimit is the drop reason of a peer's message past a bound
// (pinned, interfaces.md).
const DropPeerLimit = "peer_limit"

// DefaultPeerTurns is how many peer-admitted turns a thread takes between
// two messages of people (AGENT_PEER_TURNS).
const DefaultPeerTurns = 3

// PeerTurnsPerHour bounds the peer-admitted turns of a thread in any hour
// (pinned, interfaces.md): a team's handoffs are a few; the loops seen in
// the wild ran a turn every fifteen seconds for hours.
const PeerTurnsPerHour = 20

// PeerRoster says who the persona's peers are (*persona.Persona).
type PeerRoster interface {
	IsPeer(userID string) bool
}

// PeerTurns are the stored counts of the peer-admitted turns
// (*store.Store, both backends).
type PeerTurns interface {
	// TakePeerTurn counts one peer-admitted turn in the thread unless it
	// would pass perPerson turns since the thread's last message of a
	// person or perHour turns in the last hour; ok is false then, and
	// tell is true for the first refusal of the thread in an hour (the
	// one that is logged).
	TakePeerTurn(ctx context.Context, threadKey string, perPerson, perHour int) (ok, tell bool, err error)
	// PersonSpoke starts the thread's count since a person's message again.
	PersonSpoke(ctx context.Context, threadKey string) error
}

// Peers is the drop stage's part of the team of personas; a nil *Peers
// (no "## Peers") drops every bot's message as before.
type Peers struct {
	Roster PeerRoster
	Turns  PeerTurns
	// Max is AGENT_PEER_TURNS (DefaultPeerTurns when < 1).
	Max int
}

// admits reports whether a bot's message is a peer's that mentions this
// persona: a plain message, in a channel (a DM is one person's; a peer
// has no DM of its own with the persona), by a user id on the list.
func (p *Peers) admits(ev *Event, self Identity) bool {
	if p == nil || p.Roster == nil || ev.Kind != KindMessage || ev.IsDM() || ev.UserID == "" ||
		ev.Subtype != "" || self.UserID == "" || ev.UserID == self.UserID || !p.Roster.IsPeer(ev.UserID) {
		return false
	}
	return slices.Contains(mentions(ev.Text), self.UserID)
}

// take counts a peer-admitted turn; it returns DropPeerLimit past a bound
// (with one log line per thread per hour).
func (p *Peers) take(ctx context.Context, log *slog.Logger, ev *Event) (string, error) {
	max := p.Max
	if max < 1 {
		max = DefaultPeerTurns
	}
	ok, tell, err := p.Turns.TakePeerTurn(ctx, ev.ThreadKey(), max, PeerTurnsPerHour)
	if err != nil || ok {
		return "", err
	}
	if tell {
		log.InfoContext(ctx, "peer turns past their bound: the thread's peers are not answered until a person writes (or the hour passes)",
			"thread", ev.ThreadKey(), "channel_id", ev.ChannelID, "user_id", ev.UserID, "per_person", max, "per_hour", PeerTurnsPerHour)
	}
	return DropPeerLimit, nil
}

// personSpoke resets the thread's per-message bound: a person's message
// that the drop stage let through.
func (p *Peers) personSpoke(ctx context.Context, ev *Event) error {
	if p == nil || p.Turns == nil || ev.Kind != KindMessage || ev.ThreadTS == "" || ev.Peer {
		return nil
	}
	return p.Turns.PersonSpoke(ctx, ev.ThreadKey())
}
