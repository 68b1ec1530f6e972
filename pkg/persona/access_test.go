package persona

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The gateway's stages reach the persona through these interfaces.
var (
	_ pipeline.Roster    = (*Persona)(nil)
	_ pipeline.Directory = (*Persona)(nil)
)

// The ids of full.md.
const (
	manager  = "U024BE7LH"
	backup   = "U024BE7LJ"
	catchall = "U0APP" // scope anything
	ops      = "U0OPS" // scopes Bash, mcp__github__create_issue
	member   = "U0ALICE"
	spammer  = "U0SPAM"
)

func TestLayer(t *testing.T) {
	p := mustParseFile(t, "full.md")
	cases := []struct {
		channel string
		dm      bool
		want    pipeline.Layer
	}{
		{"C0TEAM", false, pipeline.LayerTrusted},
		{"G0PRIV", false, pipeline.LayerTrusted},
		{"C0PUB", false, pipeline.LayerAllowed},
		{"C0RANDOM", false, pipeline.LayerRestricted},
		{"", false, pipeline.LayerRestricted},
		{"D0SIM", true, pipeline.LayerDM},
		{"C0TEAM", true, pipeline.LayerDM},
	}
	for _, c := range cases {
		if got := p.Layer(c.channel, c.dm); got != c.want {
			t.Errorf("Layer(%q, %v) = %q, want %q", c.channel, c.dm, got, c.want)
		}
	}
	both := mustParseFile(t, "channels.md")
	if got := both.Layer("C0TEAM", false); got != pipeline.LayerAllowed {
		t.Errorf("a channel on both lists is %q, want allowed", got)
	}
}

func TestRoles(t *testing.T) {
	p := mustParseFile(t, "full.md")
	cases := []struct {
		user    string
		role    pipeline.Role
		manager bool
		scopes  []string
		blocked bool
	}{
		{manager, pipeline.RoleManager, true, []string{"anything"}, false},
		{backup, pipeline.RoleBackup, true, []string{"anything"}, false},
		{catchall, pipeline.RoleApprover, false, []string{"anything"}, false},
		{ops, pipeline.RoleApprover, false, []string{"Bash", "mcp__github__create_issue"}, false},
		{member, pipeline.RoleMember, false, nil, false},
		{spammer, pipeline.RoleMember, false, nil, true},
		{"U0TROLL", pipeline.RoleMember, false, nil, true},
		{"", pipeline.RoleMember, false, nil, false},
	}
	for _, c := range cases {
		if got := p.RoleOf(c.user); got != c.role {
			t.Errorf("RoleOf(%q) = %q, want %q", c.user, got, c.role)
		}
		if got := p.IsManager(c.user); got != c.manager {
			t.Errorf("IsManager(%q) = %v", c.user, got)
		}
		if got := p.ScopesOf(c.user); !slices.Equal(got, c.scopes) {
			t.Errorf("ScopesOf(%q) = %q, want %q", c.user, got, c.scopes)
		}
		if got := p.IsBlocked(c.user); got != c.blocked {
			t.Errorf("IsBlocked(%q) = %v", c.user, got)
		}
	}
}

// TestEmptyManagerIsNobody checks that a persona without a manager id does
// not make the empty user id a manager.
func TestEmptyManagerIsNobody(t *testing.T) {
	p := mustParseFile(t, "handles.md")
	if p.IsManager("") || p.RoleOf("") != pipeline.RoleMember || p.CanApprove("", "Bash") {
		t.Fatal("the empty user id has powers")
	}
}

func TestCanApprove(t *testing.T) {
	p := mustParseFile(t, "full.md")
	cases := []struct {
		user, category string
		want           bool
	}{
		{manager, "Bash", true},
		{manager, "anything-at-all", true},
		{backup, "skills", true},
		{catchall, "Write", true},
		{catchall, "skills", true},
		{ops, "Bash", true},
		{ops, "mcp__github__create_issue", true},
		{ops, "bash", false}, // tool names are case-sensitive
		{ops, "Write", false},
		{ops, "skills", false},
		{member, "Bash", false},
		{"", "Bash", false},
		// A persona-wide memory is the managers' decision alone.
		{manager, CategoryMemory, true},
		{backup, CategoryMemory, true},
		{catchall, CategoryMemory, false},
		{ops, CategoryMemory, false},
		{member, CategoryMemory, false},
	}
	for _, c := range cases {
		if got := p.CanApprove(c.user, c.category); got != c.want {
			t.Errorf("CanApprove(%q, %q) = %v, want %v", c.user, c.category, got, c.want)
		}
	}
}

// A memory scope gives an approver nothing, and SOUL.md is told so.
func TestApproverScopeMemory(t *testing.T) {
	a, warns, ok := parseApprover("<@U0ONE>: memory, Bash")
	if !ok || !slices.Equal(a.Scopes, []string{"Bash"}) {
		t.Errorf("approver %+v, %v", a, ok)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], `scope "memory" gives nothing: only the manager and the backup manager decide persona-wide memories`) {
		t.Errorf("warns %q", warns)
	}
}

func TestDMOpen(t *testing.T) {
	if mustParseFile(t, "full.md").DMOpen() {
		t.Error("DMOpen with channel lists configured")
	}
	if !mustParseFile(t, "approvers.md").DMOpen() {
		t.Error("DMOpen is false with no channel lists")
	}
}

func TestChannelOverrides(t *testing.T) {
	p := mustParseFile(t, "channel_override.md")
	cases := []struct {
		channel string
		mode    pipeline.Mode
		ok      bool
		text    string
	}{
		{"C0TEAM", pipeline.ModePlan, true, "Only discuss the roadmap here."},
		{"C0PUB", pipeline.ModeBypass, true, ""},
		{"C0NOTE", "", false, "Be formal."},
		{"C0NONE", "", false, ""},
	}
	for _, c := range cases {
		m, ok := p.ChannelMode(c.channel)
		if m != c.mode || ok != c.ok {
			t.Errorf("ChannelMode(%q) = %q, %v; want %q, %v", c.channel, m, ok, c.mode, c.ok)
		}
		if got := p.ChannelText(c.channel); got != c.text {
			t.Errorf("ChannelText(%q) = %q, want %q", c.channel, got, c.text)
		}
	}
}

// TestUnprepared checks that a Persona unmarshalled without Prepare answers
// like a prepared one.
func TestUnprepared(t *testing.T) {
	p := mustParseFile(t, "full.md")
	var raw Persona
	if err := json.Unmarshal(mustJSON(t, p), &raw); err != nil {
		t.Fatal(err)
	}
	sameAccess(t, p, &raw)
}

// sameAccess compares every access answer of two personas over the ids and
// channels either mentions.
func sameAccess(t *testing.T, a, b *Persona) {
	t.Helper()
	users := []string{"", "U0NOBODY", a.Manager.UserID, a.BackupManager.UserID}
	users = append(users, a.Blocked...)
	for _, ap := range a.Approvers {
		users = append(users, ap.UserID)
	}
	channels := []string{"", "C0NOWHERE"}
	for _, c := range append(slices.Clone(a.Trusted), a.Allowed...) {
		channels = append(channels, c.ID)
	}
	for id := range a.Channels {
		channels = append(channels, id)
	}
	categories := []string{"Bash", "skills", "anything", ""}
	for _, u := range users {
		if a.RoleOf(u) != b.RoleOf(u) || a.IsManager(u) != b.IsManager(u) || a.IsBlocked(u) != b.IsBlocked(u) ||
			!slices.Equal(a.ScopesOf(u), b.ScopesOf(u)) {
			t.Errorf("user %q: answers differ", u)
		}
		for _, c := range categories {
			if a.CanApprove(u, c) != b.CanApprove(u, c) {
				t.Errorf("CanApprove(%q, %q) differs", u, c)
			}
		}
	}
	for _, c := range channels {
		ma, oka := a.ChannelMode(c)
		mb, okb := b.ChannelMode(c)
		if a.Layer(c, false) != b.Layer(c, false) || ma != mb || oka != okb ||
			a.ChannelText(c) != b.ChannelText(c) || a.ChannelPrompt(c) != b.ChannelPrompt(c) {
			t.Errorf("channel %q: answers differ", c)
		}
	}
	if a.DMOpen() != b.DMOpen() {
		t.Error("DMOpen differs")
	}
}

// BenchmarkAccess measures the per-event lookups of the drop and auth
// stages; they must not allocate.
func BenchmarkAccess(b *testing.B) {
	p := mustParseFile(b, "full.md")
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Layer("C0PUB", false)
		_ = p.Layer("C0RANDOM", false)
		_ = p.RoleOf(ops)
		_ = p.RoleOf(member)
		_ = p.IsBlocked(spammer)
		_ = p.IsManager(member)
		_ = p.ScopesOf(ops)
		_ = p.CanApprove(ops, "Bash")
		_, _ = p.ChannelMode("C0TEAM")
	}
}

func TestAccessDoesNotAllocate(t *testing.T) {
	p := mustParseFile(t, "full.md")
	allocs := testing.AllocsPerRun(100, func() {
		_ = p.Layer("C0PUB", false)
		_ = p.RoleOf(ops)
		_ = p.IsBlocked(spammer)
		_ = p.CanApprove(ops, "Bash")
		_ = p.ScopesOf(manager)
	})
	if allocs != 0 {
		t.Fatalf("access methods allocate %v times per run", allocs)
	}
}

// TestConcurrentUse runs the read-only methods from several goroutines; it
// is meaningful under -race.
func TestConcurrentUse(t *testing.T) {
	p := mustParseFile(t, "full.md")
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				_ = p.Layer("C0TEAM", false)
				_ = p.CanApprove(ops, "Bash")
				_ = p.Prompt()
				_ = p.ChannelPrompt("C0TEAM")
				_, _ = p.Compile()
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// The mode scope is spelled exactly, like a tool's name: "Mode" is flagged,
// and only "mode" or "anything" let an approver change the mode.
func TestModeScope(t *testing.T) {
	src := "## Identity\n- Name: Ada\n\n## Reporting\n- Manager: U0MGR\n\n## Approvers\n" +
		"- <@U0MODE>: mode\n- <@U0TYPO>: Mode\n- <@U0SKL>: skills\n- <@U0ALL>: anything\n"
	p, err := Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.WarningLines(), func(w string) bool {
		return strings.Contains(w, `scope "Mode" matches no tool`) && strings.Contains(w, `did you mean "mode"?`)
	}) {
		t.Errorf("warnings = %q, want one about \"Mode\"", p.WarningLines())
	}
	for user, want := range map[string]bool{"U0MODE": true, "U0TYPO": false, "U0SKL": false, "U0ALL": true, "U0MGR": true} {
		if got := p.CanApprove(user, ScopeMode); got != want {
			t.Errorf("CanApprove(%s, mode) = %v, want %v", user, got, want)
		}
	}
}

func TestMostPublicLayer(t *testing.T) {
	c := []ChannelRef{{ID: "C1"}}
	for _, tt := range []struct {
		name string
		p    Persona
		want pipeline.Layer
	}{
		{"both lists", Persona{Trusted: c, Allowed: c}, pipeline.LayerAllowed},
		{"trusted only", Persona{Trusted: c}, pipeline.LayerTrusted},
		{"no lists", Persona{}, pipeline.LayerRestricted},
	} {
		if got := tt.p.MostPublicLayer(); got != tt.want {
			t.Errorf("%s: MostPublicLayer() = %s, want %s", tt.name, got, tt.want)
		}
	}
}
