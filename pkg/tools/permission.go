package tools

import (
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Kind is what a tool does, as the permission modes see it.
type Kind uint8

const (
	// KindChat tools are the agent's voice (reply, edit, upload,
	// request_approval, react, unreact) and its eyes on its own
	// conversation (the read tools of chat_read.go), and its memory
	// (remember, recall, forget: internal/memory applies their own rules
	// of who and where): never gated, in every mode and layer. The
	// agent_schedule tools are of this kind too: their door is the
	// sender's role (the book's rule, the same as /schedule's), not a card.
	KindChat Kind = iota + 1
	// KindRead tools only read (Read, Grep, Glob, LS, list/read skills,
	// list/open KBs).
	KindRead
	// KindEdit tools write files (Write, Edit, write/delete skills).
	KindEdit
	// KindExec tools run commands or act outside the runtime (Bash,
	// external tool servers).
	KindExec
	// KindPublish tools publish the runtime's own state (sync_manifest):
	// they need a card in every mode, and are refused in plan.
	KindPublish
)

func (k Kind) String() string {
	switch k {
	case KindChat:
		return "chat"
	case KindRead:
		return "read"
	case KindEdit:
		return "edit"
	case KindExec:
		return "exec"
	case KindPublish:
		return "publish"
	}
	return "unknown"
}

// Skills and KB tool names.
const (
	SkillsWrite  = "mcp__agent_skills__write_skill"
	SkillsList   = "mcp__agent_skills__list_skills"
	SkillsRead   = "mcp__agent_skills__read_skill"
	SkillsDelete = "mcp__agent_skills__delete_skill"
	SkillsSync   = "mcp__agent_skills__sync_manifest"
	KBList       = "mcp__agent_kb__list_kbs"
	KBOpen       = "mcp__agent_kb__open_kb"
)

// Memory tool names (internal/memory serves them).
const (
	MemoryRemember = "mcp__agent_memory__remember"
	MemoryRecall   = "mcp__agent_memory__recall"
	MemoryForget   = "mcp__agent_memory__forget"
)

// Schedule tool names (internal/schedule serves them; interfaces.md,
// "Schedules").
const (
	ScheduleAdd    = "mcp__agent_schedule__add"
	ScheduleList   = "mcp__agent_schedule__list"
	ScheduleRemove = "mcp__agent_schedule__remove"
)

var kinds = map[string]Kind{
	ChatReply: KindChat, ChatEdit: KindChat, ChatUpload: KindChat, ChatRequestApproval: KindChat,
	ChatThreadHistory: KindChat, ChatChannelHistory: KindChat, ChatGetUser: KindChat, ChatChannelInfo: KindChat,
	ChatChannelMembers: KindChat, ChatReact: KindChat, ChatUnreact: KindChat, ChatSearch: KindChat,
	ScheduleAdd: KindChat, ScheduleList: KindChat, ScheduleRemove: KindChat,
	MemoryRemember: KindChat, MemoryRecall: KindChat, MemoryForget: KindChat,
	"Read": KindRead, "Grep": KindRead, "Glob": KindRead, "LS": KindRead,
	SkillsList: KindRead, SkillsRead: KindRead, KBList: KindRead, KBOpen: KindRead,
	"Write": KindEdit, "Edit": KindEdit, SkillsWrite: KindEdit, SkillsDelete: KindEdit,
	"Bash":     KindExec,
	SkillsSync: KindPublish,
}

// KindOf returns the kind of a tool; unknown tools (external tool servers)
// are KindExec: they may do anything.
func KindOf(name string) Kind {
	if k, ok := kinds[name]; ok {
		return k
	}
	return KindExec
}

// Category is the approval category of a tool call: the tool's name, except
// sync_manifest, whose category is "skills" (interfaces.md).
func Category(name string) string {
	if name == SkillsSync {
		return "skills"
	}
	return name
}

// Verdict is what the permission rules say about one tool call.
type Verdict uint8

const (
	// Allow runs the call.
	Allow Verdict = iota + 1
	// Ask posts an approval card and waits for an authorised click.
	Ask
	// Deny refuses the call without asking.
	Deny
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "unknown"
}

// Permission are the rules of one thread: its (already layer-capped) mode,
// the auto-allow list and the tools the thread allowed with "always".
type Permission struct {
	Mode      pipeline.Mode
	AutoAllow map[string]bool
	// Always reports whether the thread allowed the tool for the rest of
	// the thread.
	Always func(tool string) bool
	// ByManager is whether the turn's sender is the manager or the backup
	// manager: only their turns change the skills as any other edit
	// (DecideSkillChange).
	ByManager bool
}

// SkillChange reports whether tool changes the skills whatever its input
// (write_skill, delete_skill). A Write or Edit of a file under skills/
// changes them too; the caller, which sees the path, decides those.
func SkillChange(tool string) bool { return tool == SkillsWrite || tool == SkillsDelete }

// ParseAllowList turns AGENT_AUTO_ALLOW_TOOLS into a set.
func ParseAllowList(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, t := range list {
		if t = strings.TrimSpace(t); t != "" {
			out[t] = true
		}
	}
	return out
}

// Decide applies the permission modes of the spec to one tool call:
//
//	chat tools        always allowed (the agent's voice)
//	sync_manifest     a card in every mode; refused in plan
//	plan              read-only: read tools run, everything else is refused
//	bypass            everything runs (the approval discipline of the
//	                  persona's mandate and request_approval apply)
//	auto-allow list   runs without a card in ask, accept-edits, dont-ask
//	"always"          likewise, for tools the thread allowed
//	accept-edits      reads and writes run; the rest asks
//	ask               everything else asks
//	dont-ask          everything else is refused
//
// write_skill and delete_skill are decided by DecideSkillChange.
func (p Permission) Decide(tool string) Verdict {
	if SkillChange(tool) {
		return p.DecideSkillChange(tool)
	}
	return p.decide(tool)
}

// DecideSkillChange decides a call that changes the skills: write_skill,
// delete_skill, or a Write or Edit of a file under skills/. A skill's
// description reaches the system prompt of every thread, the managers'
// included, so in a turn whose sender is not the manager or the backup
// manager it asks for a card in every mode (bypass, accept-edits and
// dont-ask too; the auto-allow list and "always" do not apply); plan
// refuses it. The managers' own calls are decided like any other.
func (p Permission) DecideSkillChange(tool string) Verdict {
	switch {
	case p.Mode == pipeline.ModePlan:
		return Deny
	case p.ByManager:
		return p.decide(tool)
	}
	return Ask
}

// decide is Decide without the skills rule.
func (p Permission) decide(tool string) Verdict {
	kind := KindOf(tool)
	switch {
	case kind == KindChat:
		return Allow
	case kind == KindPublish:
		if p.Mode == pipeline.ModePlan {
			return Deny
		}
		return Ask
	case p.Mode == pipeline.ModePlan:
		if kind == KindRead {
			return Allow
		}
		return Deny
	case p.Mode == pipeline.ModeBypass:
		return Allow
	case p.AutoAllow[tool] || (p.Always != nil && p.Always(tool)):
		return Allow
	case p.Mode == pipeline.ModeAcceptEdits && (kind == KindRead || kind == KindEdit):
		return Allow
	case p.Mode == pipeline.ModeDontAsk:
		return Deny
	}
	return Ask // ask, accept-edits for exec, and any unknown mode
}
