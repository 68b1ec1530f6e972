package persona

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// mustParseFile parses testdata/<file> and fails the test on an error.
func mustParseFile(t testing.TB, file string) *Persona {
	t.Helper()
	p, err := Parse(file, readTestdata(t, file))
	if err != nil {
		t.Fatalf("Parse(%s): %v", file, err)
	}
	return p
}

func readTestdata(t testing.TB, file string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestParseCorpus(t *testing.T) {
	noChannels := OpenDMs
	cases := []struct {
		file    string
		err     string   // substring of the error; "" = must parse
		line    int      // the error's line
		missing []string // Missing() when it parses
		warns   []string // substrings, each found in some WarningLines entry
		check   func(t *testing.T, p *Persona)
	}{
		{file: "full.md", check: func(t *testing.T, p *Persona) {
			want := Identity{Name: "Ada", Role: "release engineer for the platform team", Voice: "calm, precise, a little dry", Extra: []string{"Pronouns: she/her"}}
			eq(t, "identity", p.Identity, want)
			eq(t, "title", p.Title, "Persona")
			eq(t, "intro", p.Intro, "Ada keeps the release train on time.")
			eq(t, "manager", p.Manager, Contact{UserID: "U024BE7LH", Handle: "grace"})
			eq(t, "backup", p.BackupManager, Contact{UserID: "U024BE7LJ"})
			eq(t, "mandate", p.Mandate, "- Owns the release calendar and the changelog.\n- Refuses to deploy on Fridays.\n\nEscalates anything about billing to the manager.")
			eq(t, "values", p.Values, []string{"Say what you do not know.", "Ask before anything irreversible."})
			eq(t, "prompts", p.SuggestedPrompts, []string{"What is on the release calendar this week?", "Draft the changelog for the next release"})
			eq(t, "trusted", p.Trusted, []ChannelRef{{ID: "C0TEAM", Name: "platform-team"}, {ID: "G0PRIV"}})
			eq(t, "allowed", p.Allowed, []ChannelRef{{ID: "C0PUB", Name: "help-platform"}})
			eq(t, "approvers", p.Approvers, []Approver{
				{UserID: "U0APP", Scopes: []string{"anything"}, Comment: "the release captain"},
				{UserID: "U0OPS", Scopes: []string{"Bash", "mcp__github__create_issue"}, Comment: "ops on call"},
			})
			eq(t, "redactions", p.Redactions, []Redaction{
				{Pattern: `\b\d{4}-\d{4}-\d{4}-\d{4}\b`, Description: "card number", Line: 46},
				{Pattern: `(?i)password\s*[:=]\s*\S+`, Description: "password", Line: 47},
			})
			eq(t, "blocked", p.Blocked, []string{"U0SPAM", "U0TROLL"})
			eq(t, "timeout", p.ApprovalTimeout().Seconds(), 600.0)
			eq(t, "channels", p.Channels, map[string]ChannelOverride{
				"C0TEAM": {ID: "C0TEAM", Name: "platform-team", Text: "Use the team's release checklist.", Mode: pipeline.ModeAcceptEdits},
			})
			eq(t, "extra", p.Extra, []Section{{Name: "Escalation", Text: "Page the on-call engineer through the pager bot for outages."}})
			eq(t, "warnings", p.WarningLines(), []string{})
		}},
		{file: "empty.md", missing: []string{"identity.name", "manager.userId", "mandate"}, warns: []string{noChannels},
			check: func(t *testing.T, p *Persona) { eq(t, "timeout", p.ApprovalTimeoutSeconds, DefaultApprovalTimeout) }},
		{file: "missing_name.md", missing: []string{"identity.name"}},
		{file: "missing_manager.md", missing: []string{"manager.userId"}},
		{file: "missing_mandate.md", missing: []string{"mandate"}},
		{file: "spacing.md", check: func(t *testing.T, p *Persona) {
			eq(t, "title", p.Title, "My  Agent")
			eq(t, "identity", p.Identity, Identity{Name: "Cleo", Role: "triage", Voice: "quick"})
			eq(t, "manager", p.Manager.UserID, "U0MGR")
			eq(t, "backup", p.BackupManager.UserID, "U0BACKUP")
			eq(t, "mandate", p.Mandate, "* triage incoming bugs\n  and label them")
			eq(t, "trusted", p.Trusted, []ChannelRef{{ID: "C0ONE"}, {ID: "C0TWO"}, {ID: "C0THREE"}})
			eq(t, "timeout", p.ApprovalTimeoutSeconds, 0)
			eq(t, "extra", len(p.Extra), 0)
		}},
		{file: "unicode.md", warns: []string{noChannels}, check: func(t *testing.T, p *Persona) {
			eq(t, "title", p.Title, "Persönlichkeit 🤖")
			eq(t, "name", p.Identity.Name, "Zoë Łukasiewicz 日本")
			eq(t, "role", p.Identity.Role, "通訳者 — interpreter")
			eq(t, "values", p.Values, []string{"Précision d’abord."})
			eq(t, "redaction", p.Redactions[0].Pattern, `秘密\d+`)
			eq(t, "redaction description", p.Redactions[0].Description, "秘密 code")
			eq(t, "extra", p.Extra, []Section{{Name: "Ελληνικά", Text: "Καλημέρα σε όλους."}})
		}},
		{file: "duplicates.md", warns: []string{
			`:17: duplicate section "## Mandate" (first at line 9): merged`,
			`:21: duplicate section "## Trusted channels" (first at line 13): merged`,
			`:26: duplicate section "## identity" (first at line 1): merged`,
			`:28: "Name" is given twice (first at line 3)`,
			`:34: duplicate section "## NOTES" (first at line 30): merged`,
		}, check: func(t *testing.T, p *Persona) {
			eq(t, "name", p.Identity.Name, "Dup Two")
			eq(t, "mandate", p.Mandate, "- First part.\n\n- Second part.")
			eq(t, "trusted", p.Trusted, []ChannelRef{{ID: "C0A", Name: "a"}, {ID: "C0B", Name: "b"}})
			eq(t, "extra", p.Extra, []Section{{Name: "Notes", Text: "one\n\ntwo"}})
		}},
		{file: "bad_regex.md", line: 16, err: `bad_regex.md:16: invalid redaction regex "([a-z": missing closing ]`},
		{file: "bad_mode.md", line: 15, err: `bad_mode.md:15: "## Channel <#C0TEAM>": unknown permission mode "yolo"`},
		{file: "bad_timeout.md", line: 15, err: `bad_timeout.md:15: invalid approval timeout "soon"`},
		{file: "bad_peer.md", line: 16, err: `bad_peer.md:16: ## Peers: "the docs bot" is not a user id (want "- <@U…>")`},
		{file: "peers.md", check: func(t *testing.T, p *Persona) {
			eq(t, "peers", p.Peers, []string{"U0ONCALL", "U0DOCS"})
			eq(t, "is peer", p.IsPeer("U0DOCS"), true)
			eq(t, "not peer", p.IsPeer("U0MGR"), false)
		}},
		{file: "handles.md", missing: []string{"manager.userId"}, warns: []string{
			`handles.md:7: manager "@alice" is a handle, not a user id: DMs will not be answered`,
			`handles.md:8: backup manager "bob" is a handle, not a user id: ignored`,
			`handles.md:16: blocked user "@mallory" is not a user id`,
		}, check: func(t *testing.T, p *Persona) {
			eq(t, "manager", p.Manager, Contact{Handle: "alice"})
			eq(t, "backup", p.BackupManager, Contact{Handle: "bob"})
			eq(t, "blocked", p.Blocked, []string{"U0EVE"})
		}},
		{file: "channels.md", warns: []string{
			`:20: channel #general has no id`,
			`:21: channel id "D0DM" cannot be right: channel ids begin with C or G`,
			`:22: channel id "c0lower" cannot be right`,
			`channel <#C0TEAM|team> is both trusted and allowed: treated as allowed`,
		}, check: func(t *testing.T, p *Persona) {
			eq(t, "trusted", p.Trusted, []ChannelRef{{ID: "C0TEAM", Name: "team"}, {ID: "C0BARE"}, {ID: "C0PLAIN"}})
			eq(t, "allowed", p.Allowed, []ChannelRef{{ID: "G0PRIV", Name: "private"}, {ID: "C0TEAM", Name: "team"}})
			eq(t, "mandate keeps prose", p.Mandate, "- Helps.\n\nChannels listed below are trusted.")
		}},
		{file: "approvers.md", warns: []string{
			`:19: approver <@U0FOUR>: scope "bash" matches no tool (scopes are case-sensitive): did you mean "Bash"?`,
			`:19: approver <@U0FOUR>: scope "all" is not the catch-all: write "anything"`,
			`:19: approver <@U0FOUR>: scope "rm -rf" cannot be right`,
			`:19: approver <@U0FOUR>: scope "*" cannot be right`,
			`:19: approver <@U0FOUR>: empty scope`,
			`:20: approver <@U0FIVE> has no scopes: ignored`,
			`:21: approver "alice" is not a user id`,
		}, check: func(t *testing.T, p *Persona) {
			eq(t, "approvers", p.Approvers, []Approver{
				{UserID: "U0ONE", Scopes: []string{"Bash", "Write", "Edit"}, Comment: "deploys only"},
				{UserID: "U0TWO", Scopes: []string{"anything"}},
				{UserID: "U0THREE", Scopes: []string{"skills", "mcp__github__create_issue"}},
				{UserID: "U0FOUR", Scopes: []string{"bash", "all", "Read"}},
			})
		}},
		{file: "channel_override.md", warns: []string{
			`:31: section "## Channel #nameonly": channel #nameonly has no id`,
			`mode bypass of <#C0PUB> is capped at ask: it is an allowed channel`,
		}, check: func(t *testing.T, p *Persona) {
			eq(t, "channels", p.Channels, map[string]ChannelOverride{
				"C0TEAM": {ID: "C0TEAM", Name: "team", Text: "Only discuss the roadmap here.", Mode: pipeline.ModePlan},
				"C0PUB":  {ID: "C0PUB", Mode: pipeline.ModeBypass},
				"C0NOTE": {ID: "C0NOTE", Text: "Be formal."},
			})
		}},
		{file: "unknown_sections.md", check: func(t *testing.T, p *Persona) {
			eq(t, "extra", p.Extra, []Section{{Name: "Escalation policy", Text: "1. Try the runbook.\n2. Page on-call.\n\n### Details\n\nSee the wiki."}})
		}},
		{file: "comments_fences.md", warns: []string{`:29: comment <!-- is never closed`}, check: func(t *testing.T, p *Persona) {
			eq(t, "title", p.Title, "Persona")
			eq(t, "name", p.Identity.Name, "Fen")
			eq(t, "mandate", p.Mandate, "Run this to check:\n\n```sh\n## not a heading\necho \"<!-- not a comment -->\"\n```")
			eq(t, "values", p.Values, []string{"One principle that wraps.", "Two."})
			eq(t, "blocked", len(p.Blocked), 0)
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p, err := Parse(c.file, readTestdata(t, c.file))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want it to contain %q", err, c.err)
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != c.line {
					t.Fatalf("error %v: want a *ParseError at line %d", err, c.line)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error spans lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := p.Missing(); !slices.Equal(got, c.missing) {
				t.Errorf("Missing() = %q, want %q", got, c.missing)
			}
			lines := p.WarningLines()
			for _, w := range c.warns {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
					t.Errorf("no warning containing %q in:\n%s", w, strings.Join(lines, "\n"))
				}
			}
			if c.check != nil {
				c.check(t, p)
			}
		})
	}
}

// TestParseLineEndings checks that CRLF and lone CR parse like LF, with the
// same line numbers.
func TestParseLineEndings(t *testing.T) {
	src := readTestdata(t, "full.md")
	want := mustJSON(t, mustParseFile(t, "full.md"))
	for name, nl := range map[string]string{"crlf": "\r\n", "cr": "\r"} {
		t.Run(name, func(t *testing.T) {
			conv := bytes.ReplaceAll(src, []byte("\n"), []byte(nl))
			p, err := Parse("full.md", append([]byte("\uFEFF"), conv...))
			if err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, p); !bytes.Equal(got, want) {
				t.Fatalf("%s parse differs:\n%s\nwant\n%s", name, got, want)
			}
		})
	}
	_, err := Parse("SOUL.md", bytes.ReplaceAll(readTestdata(t, "bad_regex.md"), []byte("\n"), []byte("\r\n")))
	if err == nil || !strings.HasPrefix(err.Error(), "SOUL.md:16: ") {
		t.Fatalf("CRLF error = %v, want it at SOUL.md:16", err)
	}
}

func TestParseDefaultName(t *testing.T) {
	_, err := Parse("", []byte("## Redaction\n- ( ; x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "SOUL.md:2: invalid redaction regex \"(\"") {
		t.Fatalf("error = %v", err)
	}
}

func TestParseInvalidUTF8(t *testing.T) {
	p, err := Parse("x", []byte("## Identity\n- Name: A\xffB\n"))
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "name", p.Identity.Name, "A\uFFFDB")
	if !slices.ContainsFunc(p.WarningLines(), func(s string) bool { return strings.Contains(s, "not valid UTF-8") }) {
		t.Errorf("no UTF-8 warning: %q", p.WarningLines())
	}
}

func TestParseErrors(t *testing.T) {
	head := "## Identity\n- Name: X\n## Redaction\n"
	cases := []struct{ name, src, want string }{
		{"empty pattern", head + "- ; nothing\n", "SOUL.md:4: empty redaction regex"},
		{"matches empty", head + `- \d* ; digits` + "\n", `SOUL.md:4: redaction regex "\\d*" matches empty text`},
		{"nested repetition", head + "- a** ; x\n", `SOUL.md:4: invalid redaction regex "a**": invalid nested repetition operator at "**"`},
		{"negative timeout", "## Approval timeout\n- -5\n", `SOUL.md:2: invalid approval timeout "-5"`},
		{"huge timeout", "## Approval timeout\n- 99999999999\n", `SOUL.md:2: invalid approval timeout`},
		{"first error wins", "## Approval timeout\n- x\n## Redaction\n- (\n", "SOUL.md:2: "},
		{"too large", "## Mandate\n" + strings.Repeat("x", MaxSize), "SOUL.md: file is 1048587 bytes, more than the 1048576"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("SOUL.md", []byte(c.src))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error = %v, want prefix %q", err, c.want)
			}
		})
	}
}

func TestParseTolerated(t *testing.T) {
	cases := []struct {
		name, src string
		check     func(t *testing.T, p *Persona)
	}{
		{"timeout with unit and comment", "## Approval timeout\n- 120 seconds ; two minutes\n", func(t *testing.T, p *Persona) {
			eq(t, "timeout", p.ApprovalTimeoutSeconds, 120)
		}},
		{"timeout as key", "## Approval timeout\n- Seconds: 30s\n", func(t *testing.T, p *Persona) {
			eq(t, "timeout", p.ApprovalTimeoutSeconds, 30)
		}},
		{"bold keys", "## Identity\n- **Name:** Bea\n- **Role**: helper\n- Name2: x\n", func(t *testing.T, p *Persona) {
			eq(t, "identity", p.Identity, Identity{Name: "Bea", Role: "helper", Extra: []string{"Name2: x"}})
		}},
		{"emphasised value", "## Identity\n- Name: **Bea**\n", func(t *testing.T, p *Persona) {
			eq(t, "name", p.Identity.Name, "Bea")
		}},
		{"manager forms", "## Reporting\n- Manager: <@W0ENT|boss>\n- Backup manager: @U0BK (deputy)\n", func(t *testing.T, p *Persona) {
			eq(t, "manager", p.Manager.UserID, "W0ENT")
			eq(t, "backup", p.BackupManager.UserID, "U0BK")
		}},
		{"reporting key spellings", "## Reporting\n- manager_id: U0A\n- BackupManager: U0B\n- Manger: U0C\n", func(t *testing.T, p *Persona) {
			eq(t, "manager", p.Manager.UserID, "U0A")
			eq(t, "backup", p.BackupManager.UserID, "U0B")
			warned(t, p, `unknown key "Manger"`)
		}},
		{"placeholder manager is missing, not a handle", "## Reporting\n- Manager: REPLACE_ME\n", func(t *testing.T, p *Persona) {
			eq(t, "manager", p.Manager, Contact{})
			if slices.ContainsFunc(p.WarningLines(), func(s string) bool { return strings.Contains(s, "handle") }) {
				t.Errorf("placeholder reported as a handle: %q", p.WarningLines())
			}
		}},
		{"blocked forms", "## Blocked users\n- <@U0A>\n- U0B ; spammer\n- <@U0A|again>\n", func(t *testing.T, p *Persona) {
			eq(t, "blocked", p.Blocked, []string{"U0A", "U0B"})
		}},
		{"channel header with colon and name", "## Channel: <#C0X|x-chan>\n- mode: Plan\ntext\n", func(t *testing.T, p *Persona) {
			eq(t, "override", p.Channels["C0X"], ChannelOverride{ID: "C0X", Name: "x-chan", Text: "text", Mode: pipeline.ModePlan})
		}},
		{"redaction in backticks with semicolons", "## Redaction\n- `a;b ; c` ; semi ; colons\n- x;y\n", func(t *testing.T, p *Persona) {
			eq(t, "redactions", p.Redactions, []Redaction{
				{Pattern: "a;b ; c", Description: "semi ; colons", Line: 2},
				{Pattern: "x;y", Line: 3},
			})
		}},
		{"redaction prose warned", "## Redaction\n\\d{16} ; card\n", func(t *testing.T, p *Persona) {
			eq(t, "redactions", len(p.Redactions), 0)
			warned(t, p, `:2: line in "## Redaction" ignored`)
		}},
		{"suggested prompts", "## Suggested prompts\n- Summarise this thread\n- What did we\n  decide?\nAsk me anything.\n- 3\n- 4\n- 5\n",
			func(t *testing.T, p *Persona) {
				eq(t, "prompts", p.SuggestedPrompts, []string{"Summarise this thread", "What did we decide?", "3", "4"})
				warned(t, p, `:5: line in "## Suggested prompts" ignored`)
				warned(t, p, ":8: suggested prompt ignored: the platform offers at most 4")
			}},
		{"numbered values", "## Values\n1. First.\n2) Second.\n", func(t *testing.T, p *Persona) {
			eq(t, "values", p.Values, []string{"First.", "Second."})
		}},
		{"unterminated comment after a closed one", "a <!-- b\nc --> d <!-- e\nf\n", func(t *testing.T, p *Persona) {
			eq(t, "intro", p.Intro, "a\nd")
			warned(t, p, ":2: comment <!-- is never closed")
		}},
		{"second h1 is a section", "# Title\n# Identity\n- Name: Hy\n", func(t *testing.T, p *Persona) {
			eq(t, "title", p.Title, "Title")
			eq(t, "name", p.Identity.Name, "Hy")
			warned(t, p, `:2: heading "# Identity" has one '#'`)
		}},
		{"hash name is not a heading", "## Trusted channels\n#general\n", func(t *testing.T, p *Persona) {
			eq(t, "trusted", len(p.Trusted), 0)
		}},
		{"heading keeps C#", "## Notes on C#\nuse it\n", func(t *testing.T, p *Persona) {
			eq(t, "extra", p.Extra, []Section{{Name: "Notes on C#", Text: "use it"}})
		}},
		{"manager blocked", "## Reporting\n- Manager: U0M\n## Blocked\n- U0M\n", func(t *testing.T, p *Persona) {
			warned(t, p, "<@U0M> is a manager and is blocked")
		}},
		{"backup is manager", "## Reporting\n- Manager: U0M\n- Backup manager: U0M\n", func(t *testing.T, p *Persona) {
			warned(t, p, "the backup manager is the manager")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("SOUL.md", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, p)
		})
	}
}

func TestSplitRedaction(t *testing.T) {
	cases := []struct{ in, pattern, desc string }{
		{`\d{16} ; card`, `\d{16}`, "card"},
		{`\d{16}	;	tab separated`, `\d{16}`, "tab separated"},
		{`a;b ; desc`, `a;b`, "desc"},
		{`a ; b ; desc`, `a ; b`, "desc"},
		{`no description`, `no description`, ""},
		{`glued;desc`, `glued;desc`, ""},
		{`trailing ;`, `trailing`, ""},
		{"`x ; y`", "x ; y", ""},
		{"`a`b` ; d", "a`b", "d"},
		{"`unclosed ; d", "`unclosed", "d"},
		{"; only description", "", "only description"},
	}
	for _, c := range cases {
		p, d := splitRedaction(c.in)
		if p != c.pattern || d != c.desc {
			t.Errorf("splitRedaction(%q) = %q, %q; want %q, %q", c.in, p, d, c.pattern, c.desc)
		}
	}
}

func TestRefs(t *testing.T) {
	users := []struct {
		in, id string
		ok     bool
	}{
		{"U024BE7LH", "U024BE7LH", true},
		{"<@U0A>", "U0A", true},
		{"<@U0A|ann>", "U0A", true},
		{"@U0A", "U0A", true},
		{"W0ENT trailing", "W0ENT", true},
		{"@alice", "alice", false},
		{"u0lower", "u0lower", false},
		{"U", "U", false},
		{"<@U0A", "", false},
		{"", "", false},
	}
	for _, c := range users {
		id, ok := parseUserRef(c.in)
		if id != c.id || ok != c.ok {
			t.Errorf("parseUserRef(%q) = %q, %v; want %q, %v", c.in, id, ok, c.id, c.ok)
		}
	}
	chans := []struct {
		in      string
		ref     ChannelRef
		problem string
	}{
		{"<#C0A|a>", ChannelRef{ID: "C0A", Name: "a"}, ""},
		{"<#G0A>", ChannelRef{ID: "G0A"}, ""},
		{"C0A ; comment", ChannelRef{ID: "C0A"}, ""},
		{"`<#C0A|a>` the team", ChannelRef{ID: "C0A", Name: "a"}, ""},
		{"#general", ChannelRef{}, "channel #general has no id"},
		{"<#D0A>", ChannelRef{}, `channel id "D0A" cannot be right`},
		{"<#C0A", ChannelRef{}, "not closed"},
		{"", ChannelRef{}, "empty channel entry"},
	}
	for _, c := range chans {
		ref, problem := parseChannelRef(c.in)
		if ref != c.ref || !strings.Contains(problem, c.problem) || (c.problem == "") != (problem == "") {
			t.Errorf("parseChannelRef(%q) = %+v, %q; want %+v, %q", c.in, ref, problem, c.ref, c.problem)
		}
	}
}

func TestHash(t *testing.T) {
	eq(t, "hash of empty", Hash(nil), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	if Hash([]byte("a")) == Hash([]byte("b")) {
		t.Fatal("different sources hash the same")
	}
}

func TestCheck(t *testing.T) {
	p := mustParseFile(t, "empty.md")
	var me *MissingFieldsError
	if err := p.Check(); !errors.As(err, &me) || err.Error() != "missing required fields: identity.name, manager.userId, mandate" {
		t.Fatalf("Check() = %v", err)
	}
	if err := mustParseFile(t, "full.md").Check(); err != nil {
		t.Fatalf("Check() on a full persona = %v", err)
	}
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	g, w := mustJSON(t, got), mustJSON(t, want)
	if !bytes.Equal(g, w) {
		t.Errorf("%s = %s\nwant %s", what, g, w)
	}
}

func warned(t *testing.T, p *Persona, sub string) {
	t.Helper()
	if !slices.ContainsFunc(p.WarningLines(), func(s string) bool { return strings.Contains(s, sub) }) {
		t.Errorf("no warning containing %q in %q", sub, p.WarningLines())
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
