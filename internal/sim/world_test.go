package sim

import (
	"slices"
	"testing"

	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestDefaultWorldSoulMD(t *testing.T) {
	p, err := persona.Parse("SOUL.md", DefaultWorld().SoulMD())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Fatalf("warnings: %v", p.WarningLines())
	}
	if p.Identity.Name != "Simbot" || p.Mandate == "" {
		t.Errorf("identity %+v, mandate %q", p.Identity, p.Mandate)
	}
	roles := map[string]pipeline.Role{Manager: pipeline.RoleManager, Backup: pipeline.RoleBackup,
		Approver: pipeline.RoleApprover, Member: pipeline.RoleMember, Outsider: pipeline.RoleMember}
	for id, want := range roles {
		if got := p.RoleOf(id); got != want {
			t.Errorf("RoleOf(%s) = %s, want %s", id, got, want)
		}
	}
	layers := map[string]pipeline.Layer{"trusted": pipeline.LayerTrusted, "allowed": pipeline.LayerAllowed,
		"restricted": pipeline.LayerRestricted, "dm": pipeline.LayerDM}
	for layer, want := range layers {
		ch := LayerChannel(layer)
		if got := p.Layer(ch, ch == DMChannel); got != want {
			t.Errorf("Layer(%s) = %s, want %s", ch, got, want)
		}
	}
	if !p.CanApprove(Approver, "Bash") || p.CanApprove(Member, "Bash") || p.DMOpen() || p.IsBlocked(Outsider) {
		t.Error("approvals, DM or blocked list of the default world are wrong")
	}
}

func TestWorldMerge(t *testing.T) {
	str := func(s string) *string { return &s }
	list := func(s ...string) *[]string { return &s }
	cases := []struct {
		name  string
		o     *SoulOverride
		check func(t *testing.T, w World)
	}{
		{"nil changes nothing", nil, func(t *testing.T, w World) {
			d := DefaultWorld()
			if w.Manager != d.Manager || !slices.Equal(w.Trusted, d.Trusted) || w.Mandate != d.Mandate {
				t.Errorf("world = %+v", w)
			}
		}},
		{"each key replaces", &SoulOverride{Manager: str("U0BOSS"), Approvers: list("U0OPS: Bash"), Redaction: list("X-[0-9]+ ; x")},
			func(t *testing.T, w World) {
				if w.Manager != "U0BOSS" || w.Backup != Backup || !slices.Equal(w.Approvers, []string{"U0OPS: Bash"}) ||
					!slices.Equal(w.Trusted, []string{TrustedChannel}) || len(w.Redaction) != 1 {
					t.Errorf("world = %+v", w)
				}
			}},
		{"empty list and empty backup clear", &SoulOverride{Trusted: list(), Allowed: list(), Backup: str("")},
			func(t *testing.T, w World) {
				if len(w.Trusted) != 0 || len(w.Allowed) != 0 || w.Backup != "" || len(w.Approvers) != 1 {
					t.Errorf("world = %+v", w)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, DefaultWorld().Merge(c.o)) })
	}

	// Merge copies: changing the override later does not change the world.
	l := list("C0A")
	w := DefaultWorld().Merge(&SoulOverride{Trusted: l})
	(*l)[0] = "C0B"
	if w.Trusted[0] != "C0A" {
		t.Error("Merge shares the override's list")
	}
}

func TestMergedWorldThroughParser(t *testing.T) {
	src := `soul:
  manager: "<@U0BOSS>"
  backup: ""
  approvers: ["U0OPS : Bash, skills ; on call"]
  trusted: []
  allowed: ["<#C0HELP|help>"]
  blocked: [U0BOB, "<@U0EVE>"]
  redaction: ["ACME-[0-9]{6} ; acme account"]
steps: [{send: {text: hi}}]
`
	sc, err := ParseScenario("m.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := DefaultWorld().Merge(sc.Soul)
	p, err := w.Persona()
	if err != nil {
		t.Fatalf("%v\n%s", err, w.SoulMD())
	}
	if p.Manager.UserID != "U0BOSS" || p.BackupManager.UserID != "" || len(p.Trusted) != 0 ||
		p.Layer("C0HELP", false) != pipeline.LayerAllowed || p.Layer(AllowedChannel, false) != pipeline.LayerRestricted {
		t.Errorf("persona: manager %+v backup %+v trusted %v allowed %v", p.Manager, p.BackupManager, p.Trusted, p.Allowed)
	}
	if !p.CanApprove("U0OPS", "skills") || p.CanApprove("U0OPS", "Write") || p.CanApprove(Approver, "Bash") {
		t.Errorf("approvers = %+v", p.Approvers)
	}
	if !p.IsBlocked("U0BOB") || !p.IsBlocked("U0EVE") || len(p.Redactions) != 1 || p.Redactions[0].Description != "acme account" {
		t.Errorf("blocked %v, redactions %+v", p.Blocked, p.Redactions)
	}
	if got, ok := w.RoleUser("manager"); !ok || got != "U0BOSS" {
		t.Errorf("World.RoleUser(manager) = %q, %v", got, ok)
	}
	if _, ok := w.RoleUser("backup"); ok {
		t.Error("World.RoleUser(backup) found someone in a world without a backup")
	}
	if got, _ := w.RoleUser("approver"); got != "U0OPS" {
		t.Errorf("World.RoleUser(approver) = %q", got)
	}
	if _, err := (World{Name: "x", Mandate: "m"}).Persona(); err == nil {
		t.Error("a world without a manager reads back")
	}
}

func TestRoleUser(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"manager", "U0MGR", true},
		{"backup", "U0BACKUP", true},
		{"approver", "U0APP", true},
		{"member", "U0ALICE", true},
		{"outsider", "U0BOB", true},
		{"U0CAROL", "U0CAROL", true},
		{"W012AB", "W012AB", true},
		{"ceo", "", false},
		{"Manager", "", false},
		{"U", "", false},
		{"U0 X", "", false},
		{"u0alice", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := RoleUser(c.in)
			if got != c.want || ok != c.ok {
				t.Errorf("RoleUser(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
	for layer, want := range map[string]string{"trusted": "C0TEAM", "allowed": "C0PUB", "restricted": "C0RANDOM", "dm": "D0SIM", "public": ""} {
		if got := LayerChannel(layer); got != want {
			t.Errorf("LayerChannel(%q) = %q, want %q", layer, got, want)
		}
	}
}

// The original runtime's souls list approvers without scopes: such an
// approver has scope anything (interfaces.md), read as SOUL.md would.
func TestApproverWithoutScopesApprovesAnything(t *testing.T) {
	src := "soul:\n  approvers: [U0APP, \"<@U0OPS> ; on call\"]\nsteps: [{send: {text: hi}}]\n"
	sc, err := ParseScenario("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := DefaultWorld().Merge(sc.Soul).Persona()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"U0APP", "U0OPS"} {
		if !p.CanApprove(id, "Bash") || !p.CanApprove(id, "mode") {
			t.Errorf("%s cannot approve everything: %+v", id, p.Approvers)
		}
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %v", p.Warnings)
	}
}
