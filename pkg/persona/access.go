package persona

import (
	"regexp"
	"slices"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// index holds the lookup sets behind the access methods. It is not part of
// the JSON form; Prepare builds it.
type index struct {
	prepared  bool
	trusted   map[string]struct{}
	allowed   map[string]struct{}
	blocked   map[string]struct{}
	approvers map[string][]string
	regexps   []*regexp.Regexp
}

// anythingScopes is what ScopesOf returns for the managers.
var anythingScopes = []string{ScopeAnything}

// Prepare compiles the redaction patterns and builds the lookup sets of the
// access methods. Parse calls it; call it after unmarshalling a cached
// Persona or after changing its fields. It fails only on a redaction pattern
// that does not compile.
//
// Prepare must not run concurrently with other methods; once it returned,
// the Persona is read-only and safe for concurrent use.
func (p *Persona) Prepare() error {
	var ix index
	res := make([]*regexp.Regexp, 0, len(p.Redactions))
	for _, r := range p.Redactions {
		re, err := compileRedaction(p.fileName(), r.Line, r.Pattern)
		if err != nil {
			return err
		}
		res = append(res, re)
	}
	ix.regexps = res
	ix.trusted = channelSet(p.Trusted)
	ix.allowed = channelSet(p.Allowed)
	ix.blocked = make(map[string]struct{}, len(p.Blocked))
	for _, u := range p.Blocked {
		ix.blocked[u] = struct{}{}
	}
	ix.approvers = make(map[string][]string, len(p.Approvers))
	for _, a := range p.Approvers {
		ix.approvers[a.UserID] = append(ix.approvers[a.UserID], a.Scopes...)
	}
	ix.prepared = true
	p.idx = ix
	return nil
}

func channelSet(refs []ChannelRef) map[string]struct{} {
	m := make(map[string]struct{}, len(refs))
	for _, c := range refs {
		m[c.ID] = struct{}{}
	}
	return m
}

// Compile returns the compiled redaction patterns, index for index with
// Redactions. On a Persona that was not prepared it calls Prepare first.
func (p *Persona) Compile() ([]*regexp.Regexp, error) {
	if !p.idx.prepared {
		if err := p.Prepare(); err != nil {
			return nil, err
		}
	}
	return slices.Clone(p.idx.regexps), nil
}

// The lookups below fall back to scanning the slices when Prepare has not
// run, so an unprepared Persona answers correctly, only slower.

func (p *Persona) inTrusted(id string) bool {
	if p.idx.prepared {
		_, ok := p.idx.trusted[id]
		return ok
	}
	return slices.ContainsFunc(p.Trusted, func(c ChannelRef) bool { return c.ID == id })
}

func (p *Persona) inAllowed(id string) bool {
	if p.idx.prepared {
		_, ok := p.idx.allowed[id]
		return ok
	}
	return slices.ContainsFunc(p.Allowed, func(c ChannelRef) bool { return c.ID == id })
}

func (p *Persona) approverScopes(userID string) ([]string, bool) {
	if p.idx.prepared {
		s, ok := p.idx.approvers[userID]
		return s, ok
	}
	for _, a := range p.Approvers {
		if a.UserID == userID {
			return a.Scopes, true
		}
	}
	return nil, false
}

// Layer is the trust layer of a place: LayerDM for a direct message, else
// the layer of the channel lists, LayerRestricted for any other channel. A
// channel on both lists is allowed, the stricter of the two (Parse warns).
func (p *Persona) Layer(channelID string, isDM bool) pipeline.Layer {
	switch {
	case isDM:
		return pipeline.LayerDM
	case channelID == "":
		return pipeline.LayerRestricted
	case p.inAllowed(channelID):
		return pipeline.LayerAllowed
	case p.inTrusted(channelID):
		return pipeline.LayerTrusted
	}
	return pipeline.LayerRestricted
}

// MostPublicLayer is the most public layer the persona serves: allowed
// when it has allowed channels, else trusted when it has trusted ones,
// else restricted.
func (p *Persona) MostPublicLayer() pipeline.Layer {
	return pipeline.MostPublicLayer(len(p.Allowed) > 0, len(p.Trusted) > 0)
}

// RoleOf is what userID is to the persona: manager, backup, approver or
// member. The empty id is a member.
func (p *Persona) RoleOf(userID string) pipeline.Role {
	switch {
	case userID == "":
		return pipeline.RoleMember
	case userID == p.Manager.UserID:
		return pipeline.RoleManager
	case userID == p.BackupManager.UserID:
		return pipeline.RoleBackup
	}
	if _, ok := p.approverScopes(userID); ok {
		return pipeline.RoleApprover
	}
	return pipeline.RoleMember
}

// ScopesOf returns the approval scopes of userID: ["anything"] for the
// managers, the listed scopes for an approver, nil for anyone else. The
// slice is shared: callers must not modify it.
func (p *Persona) ScopesOf(userID string) []string {
	if p.IsManager(userID) {
		return anythingScopes
	}
	s, _ := p.approverScopes(userID)
	return s
}

// CanApprove reports whether userID may decide an approval card of the given
// category (a tool name such as "Bash", or "skills"). The managers may
// approve everything; an approver may approve the categories of the scope
// list, compared exactly since tool names are case-sensitive, and all of
// them with "anything". CategoryMemory is the managers' alone.
func (p *Persona) CanApprove(userID, category string) bool {
	a := p.Access(userID)
	if category == CategoryMemory {
		return a.Managing()
	}
	return a.HasScope(category)
}

// Access is who userID is to the persona, as the access predicates read
// it (pipeline.Access.Managing, Privileged, HasScope): their role and
// their approval scopes.
func (p *Persona) Access(userID string) pipeline.Access {
	return pipeline.Access{UserID: userID, Role: p.RoleOf(userID), Scopes: p.ScopesOf(userID)}
}

// IsManager reports whether userID is the manager or the backup manager.
func (p *Persona) IsManager(userID string) bool {
	return pipeline.Access{Role: p.RoleOf(userID)}.Managing()
}

// IsBlocked reports whether userID is on the "## Blocked" list.
func (p *Persona) IsBlocked(userID string) bool {
	if userID == "" {
		return false
	}
	if p.idx.prepared {
		_, ok := p.idx.blocked[userID]
		return ok
	}
	return slices.Contains(p.Blocked, userID)
}

// OpenDMs is what validate-soul, doctor and the start log say when DMOpen
// holds: an open door is said out loud.
const OpenDMs = "anyone in the workspace can DM the persona: both ## Trusted channels and ## Allowed channels are empty"

// DMOpen reports whether anyone may DM the persona: true when both channel
// lists are empty; otherwise only the managers may.
func (p *Persona) DMOpen() bool {
	return len(p.Trusted) == 0 && len(p.Allowed) == 0
}

// ChannelMode is the permission mode a "## Channel" section sets for
// channelID; ok is false when it sets none. The caller applies the layer
// cap (pipeline.EffectiveMode).
func (p *Persona) ChannelMode(channelID string) (mode pipeline.Mode, ok bool) {
	c, found := p.Channels[channelID]
	if !found || c.Mode == "" {
		return "", false
	}
	return c.Mode, true
}

// ChannelText is the raw text of the "## Channel" section of channelID, or
// "" when there is none.
func (p *Persona) ChannelText(channelID string) string {
	return p.Channels[channelID].Text
}
