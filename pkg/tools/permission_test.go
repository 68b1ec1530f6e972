package tools

import (
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// TestPermissionEveryModeKindLayer walks every layer × mode × tool kind.
// The layer caps the mode first (allowed: never more permissive than ask),
// then the mode decides.
func TestPermissionEveryModeKindLayer(t *testing.T) {
	toolsByKind := map[string]string{
		"chat":           ChatReply,
		"request":        ChatRequestApproval,
		"read":           "Read",
		"read-not-auto":  SkillsRead, // a read tool outside AGENT_AUTO_ALLOW_TOOLS
		"edit":           "Write",
		"exec":           "Bash",
		"external":       "mcp__github__create_issue",
		"publish":        SkillsSync,
		"always-allowed": "mcp__deploy__run", // allowed with "always" in this thread
	}
	// want[effective mode][kind]
	want := map[pipeline.Mode]map[string]Verdict{
		pipeline.ModeAsk: {"chat": Allow, "request": Allow, "read": Allow, "read-not-auto": Ask, "edit": Ask,
			"exec": Ask, "external": Ask, "publish": Ask, "always-allowed": Allow},
		pipeline.ModeAcceptEdits: {"chat": Allow, "request": Allow, "read": Allow, "read-not-auto": Allow, "edit": Allow,
			"exec": Ask, "external": Ask, "publish": Ask, "always-allowed": Allow},
		pipeline.ModeBypass: {"chat": Allow, "request": Allow, "read": Allow, "read-not-auto": Allow, "edit": Allow,
			"exec": Allow, "external": Allow, "publish": Ask, "always-allowed": Allow},
		pipeline.ModePlan: {"chat": Allow, "request": Allow, "read": Allow, "read-not-auto": Allow, "edit": Deny,
			"exec": Deny, "external": Deny, "publish": Deny, "always-allowed": Deny},
		pipeline.ModeDontAsk: {"chat": Allow, "request": Allow, "read": Allow, "read-not-auto": Deny, "edit": Deny,
			"exec": Deny, "external": Deny, "publish": Ask, "always-allowed": Allow},
	}
	auto := ParseAllowList([]string{"Read", "Grep", "Glob", "LS"})
	always := func(tool string) bool { return tool == "mcp__deploy__run" }
	layers := []pipeline.Layer{pipeline.LayerTrusted, pipeline.LayerAllowed, pipeline.LayerRestricted, pipeline.LayerDM}
	modes := []pipeline.Mode{pipeline.ModeAsk, pipeline.ModeAcceptEdits, pipeline.ModeBypass, pipeline.ModePlan, pipeline.ModeDontAsk}
	for _, layer := range layers {
		for _, mode := range modes {
			eff := pipeline.EffectiveMode(layer, mode)
			if layer == pipeline.LayerAllowed && (mode == pipeline.ModeBypass || mode == pipeline.ModeAcceptEdits) && eff != pipeline.ModeAsk {
				t.Fatalf("%s/%s: effective mode %s, want ask", layer, mode, eff)
			}
			for kind, tool := range toolsByKind {
				t.Run(string(layer)+"/"+string(mode)+"/"+kind, func(t *testing.T) {
					got := Permission{Mode: eff, AutoAllow: auto, Always: always}.Decide(tool)
					if got != want[eff][kind] {
						t.Fatalf("Decide(%s) in %s (layer %s) = %s, want %s", tool, eff, layer, got, want[eff][kind])
					}
				})
			}
		}
	}
}

func TestCategory(t *testing.T) {
	for tool, want := range map[string]string{"Bash": "Bash", SkillsSync: "skills", "mcp__github__create_issue": "mcp__github__create_issue"} {
		if got := Category(tool); got != want {
			t.Errorf("Category(%s) = %s, want %s", tool, got, want)
		}
	}
}

// TestPermissionSkillChanges: a change to the skills (whose descriptions
// reach every thread's prompt) asks for a card in every mode unless the
// manager or backup manager sent the turn, whatever the auto-allow list
// and "always" say; plan refuses it for everyone.
func TestPermissionSkillChanges(t *testing.T) {
	// Everything allowed that could be: the skills rule must win over it.
	auto := ParseAllowList([]string{SkillsWrite, SkillsDelete, "Write", "Edit"})
	always := func(string) bool { return true }
	member := map[pipeline.Mode]Verdict{pipeline.ModeAsk: Ask, pipeline.ModeAcceptEdits: Ask, pipeline.ModeBypass: Ask,
		pipeline.ModePlan: Deny, pipeline.ModeDontAsk: Ask}
	// The managers' calls are decided as before: the auto-allow list and
	// "always" apply, so every mode but plan lets them run.
	manager := map[pipeline.Mode]Verdict{pipeline.ModeAsk: Allow, pipeline.ModeAcceptEdits: Allow, pipeline.ModeBypass: Allow,
		pipeline.ModePlan: Deny, pipeline.ModeDontAsk: Allow}
	// Without the auto-allow list and "always", as a plain edit.
	managerPlain := map[pipeline.Mode]Verdict{pipeline.ModeAsk: Ask, pipeline.ModeAcceptEdits: Allow, pipeline.ModeBypass: Allow,
		pipeline.ModePlan: Deny, pipeline.ModeDontAsk: Deny}
	for _, tool := range []string{SkillsWrite, SkillsDelete, "Write", "Edit"} {
		for mode := range member {
			t.Run(tool+"/"+string(mode), func(t *testing.T) {
				decide := func(p Permission) Verdict {
					if SkillChange(tool) {
						if d := p.Decide(tool); d != p.DecideSkillChange(tool) {
							t.Fatalf("Decide(%s) = %s, DecideSkillChange = %s", tool, d, p.DecideSkillChange(tool))
						}
					}
					return p.DecideSkillChange(tool)
				}
				if got := decide(Permission{Mode: mode, AutoAllow: auto, Always: always}); got != member[mode] {
					t.Errorf("another sender's %s in %s = %s, want %s", tool, mode, got, member[mode])
				}
				if got := decide(Permission{Mode: mode, AutoAllow: auto, Always: always, ByManager: true}); got != manager[mode] {
					t.Errorf("the manager's %s in %s = %s, want %s", tool, mode, got, manager[mode])
				}
				if got := decide(Permission{Mode: mode, ByManager: true}); got != managerPlain[mode] {
					t.Errorf("the manager's %s in %s without allow lists = %s, want %s", tool, mode, got, managerPlain[mode])
				}
			})
		}
	}
	if SkillChange("Write") || SkillChange(SkillsRead) || !SkillChange(SkillsWrite) || !SkillChange(SkillsDelete) {
		t.Error("SkillChange names the wrong tools")
	}
}

// TestChatReadToolsNeverGated: the read tools and reactions are the
// agent's eyes and voice on its own conversation (interfaces.md, "Eyes"):
// never a card, never refused, in every layer and mode, whatever the
// auto-allow list says.
func TestChatReadToolsNeverGated(t *testing.T) {
	layers := []pipeline.Layer{pipeline.LayerTrusted, pipeline.LayerAllowed, pipeline.LayerRestricted, pipeline.LayerDM}
	modes := []pipeline.Mode{pipeline.ModeAsk, pipeline.ModeAcceptEdits, pipeline.ModeBypass, pipeline.ModePlan, pipeline.ModeDontAsk}
	for _, tool := range []string{ChatThreadHistory, ChatChannelHistory, ChatGetUser, ChatChannelInfo, ChatChannelMembers, ChatReact, ChatUnreact,
		ScheduleAdd, ScheduleList, ScheduleRemove} { // the schedules' door is the sender's role
		if k := KindOf(tool); k != KindChat {
			t.Errorf("KindOf(%s) = %s, want chat", tool, k)
		}
		for _, layer := range layers {
			for _, mode := range modes {
				p := Permission{Mode: pipeline.EffectiveMode(layer, mode), AutoAllow: map[string]bool{}}
				if got := p.Decide(tool); got != Allow {
					t.Errorf("Decide(%s) in %s/%s = %s, want allow", tool, layer, mode, got)
				}
			}
		}
	}
}
