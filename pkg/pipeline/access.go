package pipeline

import (
	"context"
	"fmt"
	"slices"
)

// Layer is the trust layer of the place a message was posted in.
type Layer string

// The trust layers of interfaces.md.
const (
	LayerTrusted    Layer = "trusted"
	LayerAllowed    Layer = "allowed"
	LayerRestricted Layer = "restricted"
	LayerDM         Layer = "dm"
)

// publicity ranks the layers by how public a conversation in them is: an
// allowed channel (any member speaks, and reads) above a trusted one (the
// same, but the persona's own team), above a restricted channel (only the
// managers speak; its members read), above a DM (one person).
var publicity = map[Layer]int{LayerAllowed: 3, LayerTrusted: 2, LayerRestricted: 1, LayerDM: 0}

// MorePrivateThan reports whether a conversation in layer l is more
// private than one in layer o. An unknown l counts as a DM, an unknown o
// as an allowed channel: unsure, the answer is the cautious one.
func (l Layer) MorePrivateThan(o Layer) bool {
	po, ok := publicity[o]
	if !ok {
		po = publicity[LayerAllowed]
	}
	return publicity[l] < po // an unknown l ranks 0, as a DM
}

// MostPublicLayer is the most public layer a persona with these channel
// lists serves: allowed when it has allowed channels, else trusted when it
// has trusted channels, else restricted (any channel it is invited to,
// where its managers speak and the channel's members read). Never dm: a
// DM is one person's.
func MostPublicLayer(hasAllowed, hasTrusted bool) Layer {
	switch {
	case hasAllowed:
		return LayerAllowed
	case hasTrusted:
		return LayerTrusted
	}
	return LayerRestricted
}

// ParseLayer checks a layer name.
func ParseLayer(s string) (Layer, error) {
	switch l := Layer(s); l {
	case LayerTrusted, LayerAllowed, LayerRestricted, LayerDM:
		return l, nil
	}
	return "", fmt.Errorf("unknown layer %q (want trusted, allowed, restricted or dm)", s)
}

// Role is what a person is to the persona.
type Role string

// Roles, most powerful first.
const (
	RoleManager  Role = "manager"
	RoleBackup   Role = "backup"
	RoleApprover Role = "approver"
	RoleMember   Role = "member"
)

// ScopeAnything is the catch-all approval scope: an approver with it
// decides every category (persona.ScopeAnything).
const ScopeAnything = "anything"

// Mode is a thread's permission mode (AGENT_DEFAULT_MODE).
type Mode string

// The permission modes of the spec.
const (
	ModeAsk         Mode = "ask"
	ModeAcceptEdits Mode = "accept-edits"
	ModeBypass      Mode = "bypass"
	ModePlan        Mode = "plan"
	ModeDontAsk     Mode = "dont-ask"
)

// ParseMode checks a permission mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAsk, ModeAcceptEdits, ModeBypass, ModePlan, ModeDontAsk:
		return m, nil
	}
	return "", fmt.Errorf("unknown permission mode %q (want ask, accept-edits, bypass, plan or dont-ask)", s)
}

// Drop reasons: the values of the reason label of agent_chat_drops_total.
const (
	DropWhitelist = "whitelist"
	DropBlocked   = "blocked"
	DropDM        = "dm"
	DropSelf      = "self"
	DropDuplicate = "duplicate"
	DropOneOnOne  = "one_on_one"
)

// DropReasons lists every drop reason, so that each is exported at 0 from start.
var DropReasons = []string{DropWhitelist, DropBlocked, DropDM, DropSelf, DropDuplicate, DropOneOnOne}

// Access is what the auth stage resolved about an event: who sent it, where,
// and what the thread may do. Later stages and the tools read it from the
// context.
type Access struct {
	UserID string
	Role   Role
	// Scopes are the approval categories the sender may decide ("anything"
	// matches all); managers decide everything.
	Scopes []string
	Layer  Layer
	Mode   Mode
	// MostPublic is the persona's most public layer (MostPublicLayer).
	// What is written where every conversation reads it (skills/,
	// knowledge/) from a conversation more private than this crosses a
	// wall (Walled).
	MostPublic Layer
}

// Walled reports whether the conversation is more private than the
// persona's most public layer: what it writes where every conversation
// reads it reaches people it was not said to. An unset MostPublic counts
// as allowed.
func (a Access) Walled() bool { return a.Layer.MorePrivateThan(a.MostPublic) }

// Managing reports whether the sender is the manager or the backup
// manager: who decides for the persona (persona-wide memories, another
// conversation's schedules, everything an approver may).
func (a Access) Managing() bool {
	return a.Role == RoleManager || a.Role == RoleBackup
}

// Privileged reports whether the sender is the manager, the backup
// manager or an approver of any scope: who may act on a whole channel.
func (a Access) Privileged() bool {
	return a.Managing() || a.Role == RoleApprover
}

// HasScope reports whether the sender may decide what scope covers: the
// manager, the backup manager, or an approver whose scopes are
// "anything" (ScopeAnything) or name scope. Scopes an access states
// without the approver role count for nothing.
func (a Access) HasScope(scope string) bool {
	if a.Managing() {
		return true
	}
	return a.Role == RoleApprover && slices.ContainsFunc(a.Scopes, func(s string) bool { return s == ScopeAnything || s == scope })
}

type accessKey struct{}

// NewContextWithAccess returns ctx carrying a.
func NewContextWithAccess(ctx context.Context, a Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// AccessFromContext returns the Access the auth stage stored, if any.
func AccessFromContext(ctx context.Context) (Access, bool) {
	a, ok := ctx.Value(accessKey{}).(Access)
	return a, ok
}
