package connect

import (
	"context"
	"errors"
	"time"
)

// StateTTL is how long a sign-in link works (interfaces.md: 10 minutes).
const StateTTL = 10 * time.Minute

// Record is one person's connection to one server as stored: Sealed is
// the token set, sealed (seal.go); nothing in the other fields is secret.
type Record struct {
	User    string
	Server  string
	Account string
	Sealed  []byte
	Created time.Time
	Updated time.Time
}

// State is a pending sign-in as stored: Hash is the SHA-256 of the link's
// state (hex), never the state itself; Sealed holds the PKCE verifier and,
// once started, the client and endpoints (pending, sealed).
type State struct {
	Hash     string
	User     string
	Server   string
	Channel  string
	ThreadTS string
	Sealed   []byte
	Expires  time.Time
	// Used is when the callback took it; zero while unused.
	Used time.Time
}

// Store keeps connections and pending sign-ins (*store.Store).
type Store interface {
	// PutConnection writes r, replacing the person's connection to the
	// same server.
	PutConnection(ctx context.Context, r Record) error
	// Connection returns the person's connection to server; ok is false
	// when there is none.
	Connection(ctx context.Context, user, server string) (r Record, ok bool, err error)
	// Connections lists the connections of user, or everyone's when user
	// is "", by person then server.
	Connections(ctx context.Context, user string) ([]Record, error)
	// DeleteConnection removes one; it reports whether there was one.
	DeleteConnection(ctx context.Context, user, server string) (bool, error)
	// PutConnectState writes a new pending sign-in (pruning those expired
	// before now).
	PutConnectState(ctx context.Context, s State, now time.Time) error
	// UpdateConnectState replaces the sealed part of an unused state.
	UpdateConnectState(ctx context.Context, hash string, sealed []byte) (bool, error)
	// ConnectState reads a state without taking it; ok is false when none.
	ConnectState(ctx context.Context, hash string) (s State, ok bool, err error)
	// TakeConnectState marks the state used at now, once: taken is false
	// when it was used before (s then says when) or is unknown (ok false).
	TakeConnectState(ctx context.Context, hash string, now time.Time) (s State, ok, taken bool, err error)
}

// ErrNoKey is returned by New when an "auth": "oauth" server is configured
// without AGENT_SECRET_KEY.
var ErrNoKey = errors.New(MsgNoKey)
