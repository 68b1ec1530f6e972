package persona

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// ParserVersion identifies the shape and meaning of Parse's output. It is
// part of the cache key of a parsed persona: bump it whenever the same
// SOUL.md would parse to a different Persona.
const ParserVersion = "6"

// DefaultApprovalTimeout is how long an approval card waits when SOUL.md has
// no "## Approval timeout" (interfaces.md: 900 seconds).
const DefaultApprovalTimeout = 900

// Placeholder marks a value the operator still has to fill in. The scaffold
// uses it for the required fields, and a required field whose value contains
// it counts as missing, so that the scaffold fails validation as shipped.
const Placeholder = "REPLACE_ME"

// ScopeAnything is the catch-all approval scope (pipeline.ScopeAnything).
const ScopeAnything = pipeline.ScopeAnything

// ScopeMode is the scope of an approver who may change a thread's or a
// channel's permission mode (/mode); "anything" covers it too.
const ScopeMode = "mode"

// ScopeBudget is the scope of an approver who may raise a thread's budget
// from the card of its refusal ("## Budgets"); "anything" covers it too.
const ScopeBudget = "budget"

// ScopeModel is the scope of an approver who may choose a thread's or a
// channel's model (/model), which sets what its turns cost; "anything"
// covers it too.
const ScopeModel = "model"

// ScopeSchedule is the scope of an approver who may create, list and
// remove the persona's schedules; "anything" covers it too.
const ScopeSchedule = "schedule"

// CategoryMemory is the approval category of a persona-wide memory the
// model asks for (interfaces.md, "Walls"): only the manager and the backup
// manager decide it. No approver scope covers it, "anything" included: a
// memory that every conversation carries is the managers' decision.
const CategoryMemory = "memory"

// Persona is a parsed SOUL.md. The exported fields are its JSON form (the
// cached extraction result); the lookup sets behind the access methods are
// rebuilt by Prepare.
type Persona struct {
	// File is the name Parse was given, used in messages.
	File string `json:"file,omitempty"`
	// Title is the text of the "# Title" line, if any.
	Title string `json:"title,omitempty"`
	// Intro is free text before the first "##" section.
	Intro         string   `json:"intro,omitempty"`
	Identity      Identity `json:"identity"`
	Manager       Contact  `json:"manager"`
	BackupManager Contact  `json:"backupManager"`
	// Mandate is the "## Mandate" text as written (bullets and prose).
	Mandate string `json:"mandate"`
	// Values are the operating principles, one per bullet.
	Values []string `json:"values,omitempty"`
	// SuggestedPrompts are what the persona offers a person who opens its
	// DM or a new DM thread ("## Suggested prompts", one per bullet, at
	// most MaxSuggestedPrompts).
	SuggestedPrompts []string     `json:"suggestedPrompts,omitempty"`
	Trusted          []ChannelRef `json:"trustedChannels,omitempty"`
	Allowed          []ChannelRef `json:"allowedChannels,omitempty"`
	// Approvers are in file order; a person listed twice has one entry with
	// the scopes merged.
	Approvers  []Approver  `json:"approvers,omitempty"`
	Redactions []Redaction `json:"redactions,omitempty"`
	// Blocked are user ids whose messages are dropped.
	Blocked []string `json:"blocked,omitempty"`
	// Peers are the user ids of the other personas (or apps) of "## Peers"
	// whose messages are admitted when they mention this persona (peers.go).
	Peers []string `json:"peers,omitempty"`
	// ApprovalTimeoutSeconds is how long an approval card waits; 0 waits
	// forever. Parse sets DefaultApprovalTimeout when the file has none.
	ApprovalTimeoutSeconds int `json:"approvalTimeoutSeconds"`
	// Budgets are the token caps of "## Budgets" (budgets.go).
	Budgets Budgets `json:"budgets,omitzero"`
	// Network are the hosts of "## Network" (network.go): what the
	// agent's commands may reach through the egress proxy.
	Network []NetHost `json:"network,omitempty"`
	// Channels are the "## Channel <#C…>" overrides, keyed by channel id.
	Channels map[string]ChannelOverride `json:"channels,omitempty"`
	// Extra are the sections Parse does not know, kept for the prompt.
	Extra    []Section `json:"extra,omitempty"`
	Warnings []Warning `json:"warnings,omitempty"`

	// LoadingMessages are the lines the platform rotates while a turn
	// works ("## Loading messages", one per bullet, at most
	// MaxLoadingMessages), sent with the status line.
	LoadingMessages []string `json:"loadingMessages,omitempty"`

	idx index
}

// Identity is the "## Identity" section.
type Identity struct {
	Name  string `json:"name"`
	Role  string `json:"role,omitempty"`
	Voice string `json:"voice,omitempty"`
	// Extra are the section's other lines ("Key: value" or prose), kept for
	// the prompt.
	Extra []string `json:"extra,omitempty"`
}

// Contact is a person the persona reports to.
type Contact struct {
	// UserID is the chat user id (U… or W…); empty when SOUL.md gives none
	// or gives a handle instead.
	UserID string `json:"userId,omitempty"`
	// Handle is the display handle, without "@"; informational only.
	Handle string `json:"handle,omitempty"`
}

// ChannelRef is a channel of a channel list.
type ChannelRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// String renders the reference the way the chat platform writes it.
func (c ChannelRef) String() string {
	if c.Name != "" {
		return "<#" + c.ID + "|" + c.Name + ">"
	}
	return "<#" + c.ID + ">"
}

// Approver is a person who may decide approval cards of some categories.
type Approver struct {
	UserID string `json:"userId"`
	// Scopes are tool names or categories ("Bash", "skills", ...), compared
	// exactly; ScopeAnything matches every category.
	Scopes  []string `json:"scopes"`
	Comment string   `json:"comment,omitempty"`
}

// Redaction is an operator pattern from "## Redaction".
type Redaction struct {
	Pattern     string `json:"pattern"`
	Description string `json:"description,omitempty"`
	// Line is where the pattern is in SOUL.md.
	Line int `json:"line,omitempty"`
}

// ChannelOverride is a "## Channel <#C…>" section.
type ChannelOverride struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Text is appended to the system prompt in that channel.
	Text string `json:"text,omitempty"`
	// Mode overrides the permission mode there; empty when not set.
	Mode pipeline.Mode `json:"mode,omitempty"`
}

// Section is a section Parse does not know, kept as free text.
type Section struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// Warning is something in SOUL.md that is probably wrong but does not stop
// the persona from loading.
type Warning struct {
	// Line is the line it is about; 0 for the file as a whole.
	Line int    `json:"line,omitempty"`
	Text string `json:"text"`
}

// Hash returns the hex SHA-256 of a SOUL.md source: with ParserVersion, the
// cache key of its parsed form.
func Hash(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// ApprovalTimeout is how long an approval card waits for a decision; 0
// means it waits forever.
func (p *Persona) ApprovalTimeout() time.Duration {
	return time.Duration(p.ApprovalTimeoutSeconds) * time.Second
}

// Missing returns the required fields that are absent, by their spec names
// and in this order: identity.name, manager.userId, mandate. A value that
// still contains Placeholder counts as absent. An empty result means the
// persona validates.
func (p *Persona) Missing() []string {
	var m []string
	if unset(p.Identity.Name) {
		m = append(m, "identity.name")
	}
	if !isUserID(p.Manager.UserID) {
		m = append(m, "manager.userId")
	}
	if unset(p.Mandate) {
		m = append(m, "mandate")
	}
	return m
}

// MissingFieldsError reports required fields that SOUL.md lacks.
type MissingFieldsError struct {
	Fields []string
}

// Error renders the error as validate-soul prints it:
// "missing required fields: identity.name, mandate".
func (e *MissingFieldsError) Error() string {
	return "missing required fields: " + strings.Join(e.Fields, ", ")
}

// Check returns a *MissingFieldsError when Missing is not empty, else nil.
func (p *Persona) Check() error {
	if m := p.Missing(); len(m) > 0 {
		return &MissingFieldsError{Fields: m}
	}
	return nil
}

// WarningLines renders the warnings as "<file>:<line>: <text>" (or
// "<file>: <text>" for warnings about the whole file), in order.
func (p *Persona) WarningLines() []string {
	file := p.fileName()
	out := make([]string, 0, len(p.Warnings))
	for _, w := range p.Warnings {
		if w.Line > 0 {
			out = append(out, fmt.Sprintf("%s:%d: %s", file, w.Line, w.Text))
		} else {
			out = append(out, file+": "+w.Text)
		}
	}
	return out
}

// unset reports whether a required text value is empty or a placeholder.
func unset(s string) bool {
	return strings.TrimSpace(s) == "" || strings.Contains(s, Placeholder)
}

func (p *Persona) fileName() string {
	if p.File == "" {
		return defaultFile
	}
	return p.File
}
