package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestParseScenario(t *testing.T) {
	src := `layer: trusted
as: member
agent_behavior: request_approval
steps:
  - send: {text: "please deploy"}
  - expect_card: {kind: approval}
  - expect_pending: {}
  - click: {as: U0APP, action: approve}
  - expect_reply: {contains: "approved by"}
`
	sc, err := ParseScenario("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Layer != "trusted" || sc.As != "member" || sc.AgentBehavior != "request_approval" || len(sc.Steps) != 5 || sc.Name != "x" {
		t.Fatalf("scenario = %+v", sc)
	}
	if st := sc.Steps[3]; st.Kind != "click" || st.As != "U0APP" || st.Action != "approve" || st.Line != 8 {
		t.Fatalf("click step = %+v", st)
	}
	def, err := ParseScenario("d.yaml", []byte("steps:\n  - send: {text: hi}\n"))
	if err != nil || def.Layer != "dm" || def.As != "manager" || def.AgentBehavior != "reply" {
		t.Fatalf("defaults = %+v, %v", def, err)
	}
}

func TestParseScenarioErrors(t *testing.T) {
	cases := map[string]struct{ src, want string }{
		"unknown top key":   {"layer: dm\nfoo: 1\nsteps: []\n", `f.yaml:2: unknown key "foo"`},
		"unknown step key":  {"steps:\n  - send: {text: hi, color: red}\n", `f.yaml:2: unknown key "color" in step 1 (send)`},
		"unknown step":      {"steps:\n  - shout: {text: hi}\n", `f.yaml:2: unknown step "shout"`},
		"unknown soul key":  {"soul:\n  boss: U1\nsteps: []\n", `f.yaml:2: unknown key "boss" in soul`},
		"bad layer":         {"layer: public\nsteps: []\n", `unknown layer "public"`},
		"bad behaviour":     {"agent_behavior: dance\nsteps: []\n", `unknown agent_behavior "dance"`},
		"bad action":        {"steps:\n  - click: {action: maybe}\n", `unknown action "maybe"`},
		"two keys in step":  {"steps:\n  - send: {text: a}\n    expect_reply: {contains: b}\n", "not a single-key mapping"},
		"send without text": {"steps:\n  - send: {}\n", "needs text"},
		"no steps":          {"layer: dm\n", "no steps"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseScenario("f.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestWorldThroughTheRealParser(t *testing.T) {
	empty := []string{}
	blocked := []string{Outsider}
	w := DefaultWorld().Merge(&SoulOverride{Blocked: &blocked, Allowed: &empty})
	p, err := persona.Parse("SOUL.md", w.SoulMD())
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Missing(); len(m) > 0 {
		t.Fatalf("missing %v", m)
	}
	checks := []struct {
		got, want any
	}{
		{p.RoleOf(Manager), pipeline.RoleManager},
		{p.RoleOf(Backup), pipeline.RoleBackup},
		{p.RoleOf(Approver), pipeline.RoleApprover},
		{p.RoleOf(Member), pipeline.RoleMember},
		{p.Layer(TrustedChannel, false), pipeline.LayerTrusted},
		{p.Layer(AllowedChannel, false), pipeline.LayerRestricted}, // allowed list emptied
		{p.Layer(DMChannel, true), pipeline.LayerDM},
		{p.IsBlocked(Outsider), true},
		{p.CanApprove(Approver, "deploy"), true},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %v, want %v", i, c.got, c.want)
		}
	}
}

func TestRoleUserAndLayerChannel(t *testing.T) {
	for as, want := range map[string]string{"manager": Manager, "member": Member, "outsider": Outsider, "U0XYZ": "U0XYZ"} {
		if got, ok := RoleUser(as); !ok || got != want {
			t.Errorf("RoleUser(%q) = %q", as, got)
		}
	}
	if _, ok := RoleUser("ceo"); ok {
		t.Error("unknown role accepted")
	}
	if LayerChannel("restricted") != RestrictedChannel || LayerChannel("dm") != DMChannel {
		t.Error("LayerChannel")
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.yaml", "a.yaml", "c.txt"} {
		os.WriteFile(filepath.Join(dir, n), []byte("steps: []\n"), 0o600)
	}
	all, err := Discover(dir, nil)
	if err != nil || len(all) != 2 || !strings.HasSuffix(all[0], "a.yaml") {
		t.Fatalf("all = %v, %v", all, err)
	}
	some, _ := Discover(dir, []string{filepath.Join(dir, "b.*"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "zz*")})
	if len(some) != 1 {
		t.Fatalf("some = %v", some)
	}
}
