package sim

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseScenarioSpecExample(t *testing.T) {
	src := `# the spec's keys, every step kind
name: approval round trip
layer: allowed
as: member
agent_behavior: request_approval
soul:
  manager: U0BOSS
  backup: null
  approvers: ["U0APP : Bash, skills", "<@U0OPS>: anything ; on call"]
  trusted: [C0TEAM]
  allowed: ["<#C0PUB|public>"]
  blocked: [U0BOB]
  redaction: ["ACME-[0-9]{6} ; acme account"]
  mandate: |
    - Deploys, carefully.
steps:
  - send: {text: please deploy, thread: t1, channel: trusted}
  - send: {text: in the dm, dm: true, as: U0ALICE}
  - expect_card: {kind: approval, contains: deploy prod}
  - expect_pending: {}
  - expect_pending:
  - click: {as: approver, action: approve}
  - expect_reply: {contains: "approved by"}
  - expect_drop: {reason: whitelist}
  - expect_card: {}
`
	sc, err := ParseScenario("sim/scenarios/x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "approval round trip" || sc.Layer != "allowed" || sc.As != "member" || sc.AgentBehavior != "request_approval" ||
		sc.File != "sim/scenarios/x.yaml" {
		t.Errorf("scenario = %+v", sc)
	}
	o := sc.Soul
	if o == nil || *o.Manager != "U0BOSS" || *o.Backup != "" || len(*o.Approvers) != 2 || (*o.Allowed)[0] != "<#C0PUB|public>" ||
		(*o.Blocked)[0] != "U0BOB" || len(*o.Redaction) != 1 || !strings.Contains(*o.Mandate, "Deploys") {
		t.Fatalf("soul = %+v", o)
	}
	want := []Step{
		{Line: 17, Kind: StepSend, Text: "please deploy", Thread: "t1", Channel: TrustedChannel},
		{Line: 18, Kind: StepSend, Text: "in the dm", DM: true, As: "U0ALICE"},
		{Line: 19, Kind: StepExpectCard, CardKind: "approval", Contains: "deploy prod"},
		{Line: 20, Kind: StepExpectPending},
		{Line: 21, Kind: StepExpectPending},
		{Line: 22, Kind: StepClick, As: "approver", Action: "approve"},
		{Line: 23, Kind: StepExpectReply, Contains: "approved by"},
		{Line: 24, Kind: StepExpectDrop, Reason: "whitelist"},
		{Line: 25, Kind: StepExpectCard, CardKind: "approval"},
	}
	if !slices.EqualFunc(sc.Steps, want, func(a, b Step) bool { return reflect.DeepEqual(a, b) }) {
		for i := range max(len(want), len(sc.Steps)) {
			var got, exp Step
			if i < len(sc.Steps) {
				got = sc.Steps[i]
			}
			if i < len(want) {
				exp = want[i]
			}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("step %d = %+v, want %+v", i+1, got, exp)
			}
		}
	}
}

// A send attaches files by name.
func TestParseScenarioFiles(t *testing.T) {
	sc, err := ParseScenario("x.yaml", []byte("steps:\n  - send: {text: see, files: [chart.png, spec.pdf, notes.txt]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Steps[0].Files; !slices.Equal(got, []string{"chart.png", "spec.pdf", "notes.txt"}) {
		t.Errorf("files = %q", got)
	}
	for src, want := range map[string]string{
		"steps:\n  - send: {text: see, files: chart.png}\n":     "x.yaml:2: files in step 1 (send) is a list of file names",
		"steps:\n  - send: {text: see, files: []}\n":            "x.yaml:2: files in step 1 (send) is a list of file names",
		"steps:\n  - send: {text: see, files: [a/b.png]}\n":     `x.yaml:2: files in step 1 (send): "a/b.png" is a path`,
		"steps:\n  - send: {text: see, files: [{n: 1}]}\n":      "x.yaml:2: files in step 1 (send): each file is a name",
		"steps:\n  - expect_reply: {contains: x, files: [a]}\n": `x.yaml:2: unknown key "files" in step 1 (expect_reply)`,
	} {
		if _, err := ParseScenario("x.yaml", []byte(src)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// Sample files are what their names say, the same bytes every time.
// (The images are encoded once; each call returns a copy.)
func TestSampleFile(t *testing.T) {
	for name, want := range map[string]string{"a.png": "image/png", "b.JPG": "image/jpeg", "c.gif": "image/gif",
		"d.webp": "image/webp", "e.pdf": "application/pdf", "f.txt": "text/plain", "g": "text/plain"} {
		typ, content := SampleFile(name)
		if typ != want || len(content) == 0 {
			t.Errorf("SampleFile(%s) = %s, %d bytes; want %s", name, typ, len(content), want)
		}
		if _, again := SampleFile(name); !bytes.Equal(content, again) {
			t.Errorf("SampleFile(%s) changed between calls", name)
		}
		kept := bytes.Clone(content)
		content[0] ^= 0xff // a caller's copy is its own
		if _, again := SampleFile(name); !bytes.Equal(kept, again) {
			t.Errorf("SampleFile(%s) changed after a caller wrote its copy", name)
		}
		content = kept
		if got := http.DetectContentType(content); strings.HasPrefix(want, "image/") || want == "application/pdf" {
			if got != want {
				t.Errorf("SampleFile(%s)'s bytes are %s, want %s", name, got, want)
			}
		}
	}
}

func TestParseScenarioDefaults(t *testing.T) {
	sc, err := ParseScenario("dir/hello-world.yaml", []byte("steps:\n  - send: {text: hi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "hello-world" || sc.Layer != "dm" || sc.As != "manager" || sc.AgentBehavior != "reply" || sc.Soul != nil ||
		sc.AgentView {
		t.Errorf("defaults = %+v", sc)
	}
}

func TestParseScenarioErrorLines(t *testing.T) {
	const f = "sim/scenarios/x.yaml"
	cases := []struct {
		name, src, want string
	}{
		{"unknown top-level key", "layer: dm\nfoo: 1\nsteps: [{send: {text: hi}}]\n", f + `:2: unknown key "foo"`},
		{"unknown key in step", "steps:\n  - send: {text: hi}\n  - expect_reply:\n      contains: x\n      foo: 1\n", f + `:5: unknown key "foo" in step 2 (expect_reply)`},
		{"key in expect_pending", "steps:\n  - expect_pending: {card: 1}\n", f + `:2: unknown key "card" in step 1 (expect_pending) (want no fields)`},
		{"unknown key in soul", "soul:\n  manager: U0X\n  boss: U0Y\nsteps: [{send: {text: hi}}]\n", f + `:3: unknown key "boss" in soul`},
		{"agent_view not a bool", "agent_view: maybe\nsteps: [{send: {text: hi}}]\n", f + ":1: agent_view is true or false"},
		{"unknown step kind", "steps:\n  - send: {text: hi}\n  - shout: {text: hi}\n", f + `:3: unknown step "shout" in step 2`},
		{"step with two keys", "steps:\n  - send: {text: a}\n    expect_reply: {contains: b}\n", f + ":2: step 1 is not a single-key mapping"},
		{"step as a scalar", "steps:\n  - send\n", f + ":2: step 1 is not a single-key mapping"},
		{"step value not a mapping", "steps:\n  - send: hello\n", f + ":2: step 1 (send) takes a mapping"},
		{"unknown layer", "layer: public\nsteps: [{send: {text: hi}}]\n", f + `:1: unknown layer "public"`},
		{"unknown role", "as: ceo\nsteps: [{send: {text: hi}}]\n", f + `:1: unknown actor "ceo"`},
		{"lower-case user id", "steps:\n  - send: {text: hi, as: u0alice}\n", f + `:2: unknown actor "u0alice" in step 1 (send)`},
		{"unknown behaviour", "agent_behavior: dance\nsteps: [{send: {text: hi}}]\n", f + `:1: unknown agent_behavior "dance"`},
		{"unknown action", "steps:\n  - click: {action: maybe}\n", f + `:2: unknown action "maybe" in step 1 (click)`},
		{"unknown card kind", "steps:\n  - expect_card: {kind: poll}\n", f + `:2: unknown card kind "poll"`},
		{"unknown drop reason", "steps:\n  - expect_drop: {reason: spam}\n", f + `:2: unknown drop reason "spam"`},
		{"bad channel", "steps:\n  - send: {text: hi, channel: general}\n", f + `:2: channel "general" in step 1 (send) is neither`},
		{"dm and channel", "steps:\n  - send: {text: hi, channel: C0PUB, dm: true}\n", f + ":2: channel in step 1 (send): a send goes to a channel or to the DM"},
		{"dm not a bool", "steps:\n  - send: {text: hi, dm: sometimes}\n", f + ":2: dm in step 1 (send) is true or false"},
		{"mention not a bool", "steps:\n  - send: {text: hi, mention: maybe}\n", f + ":2: mention in step 1 (send) is true or false"},
		{"bot not a bool", "steps:\n  - send: {text: hi, bot: [x]}\n", f + ":2: bot in step 1 (send) is true or false"},
		{"text not a string", "steps:\n  - send: {text: [a, b]}\n", f + ":2: text in step 1 (send) must be a string"},
		{"send without text", "steps:\n  - send: {as: member}\n", f + ":2: step 1 (send) needs text"},
		{"expect_reply without contains", "steps:\n  - expect_reply: {}\n", f + ":2: step 1 (expect_reply) needs contains"},
		{"expect_drop without reason", "steps:\n  - expect_drop:\n", f + ":2: step 1 (expect_drop) needs reason"},
		{"click without action", "steps:\n  - click: {as: approver}\n", f + ":2: step 1 (click) needs action"},
		{"advance not a duration", "steps:\n  - advance: soon\n", f + ":2: step 1 (advance) takes a duration"},
		{"advance of zero", "steps:\n  - advance: 0s\n", f + ":2: step 1 (advance) takes a duration"},
		{"restart not a duration", "steps:\n  - send: {text: hi}\n  - restart: {down: 2h}\n", f + ":3: step 2 (restart) takes the time the service is down"},
		{"restart back in time", "steps:\n  - restart: -1h\n", f + ":2: step 1 (restart) takes the time the service is down"},
		{"duplicate key", "layer: dm\nlayer: trusted\nsteps: [{send: {text: hi}}]\n", f + `:2: duplicate key "layer" (first at line 1)`},
		{"duplicate step field", "steps:\n  - send: {text: a, text: b}\n", f + `:2: duplicate key "text" in step 1 (send)`},
		{"no steps key", "layer: dm\n", f + ": no steps"},
		{"empty steps", "steps: []\n", f + ":1: no steps"},
		{"steps not a list", "steps: {send: {text: hi}}\n", f + ":1: steps is a list"},
		{"not a mapping", "- send: {text: hi}\n", f + ":1: a scenario must be a mapping"},
		{"empty file", "", f + ": empty scenario"},
		{"two documents", "steps: [{send: {text: hi}}]\n---\nlayer: dm\n", f + ":2: more than one YAML document"},
		{"yaml syntax", "steps:\n  - send: {text: hi\n", f + ":"},
		{"soul not a mapping", "soul: [U0X]\nsteps: [{send: {text: hi}}]\n", f + ":1: soul in soul must be a mapping"},
		{"manager not an id", "soul:\n  manager: alice\nsteps: [{send: {text: hi}}]\n", f + `:2: manager in soul: "alice" is not a user id`},
		{"manager emptied", "soul:\n  manager:\nsteps: [{send: {text: hi}}]\n", f + `:2: manager in soul: "" is not a user id`},
		{"approver with an empty scope list", "soul:\n  approvers: [\"U0X :\"]\nsteps: [{send: {text: hi}}]\n", f + ":2: approvers in soul: "},
		{"approver not an id", "soul:\n  approvers:\n    - U0X: Bash\n    - bob: Bash\nsteps: [{send: {text: hi}}]\n", f + `:4: approvers in soul: approver "bob" is not a user id`},
		{"channel by name", "soul:\n  trusted: ['#general']\nsteps: [{send: {text: hi}}]\n", f + ":2: trusted in soul: channel #general has no id"},
		{"blocked not an id", "soul:\n  blocked: [bob]\nsteps: [{send: {text: hi}}]\n", f + `:2: blocked in soul: blocked user "bob" is not a user id`},
		{"peer not an id", "soul:\n  peers: [oncall]\nsteps: [{send: {text: hi}}]\n", f + `:2: peers in soul: ## Peers: "oncall" is not a user id`},
		{"peer not a flag", "steps: [{send: {text: hi, peer: maybe}}]\n", f + `:1: peer in step 1 (send) is true or false`},
		{"bad regex", "soul:\n  redaction: ['([a-z ; broken']\nsteps: [{send: {text: hi}}]\n", f + `:2: redaction in soul: invalid redaction regex "([a-z"`},
		{"list item on two lines", "soul:\n  blocked: [\"U0X\\nU0Y\"]\nsteps: [{send: {text: hi}}]\n", f + ":2: blocked in soul: "},
		{"list not a list", "soul:\n  trusted: C0TEAM\nsteps: [{send: {text: hi}}]\n", f + ":2: trusted in soul must be a list of strings"},
		{"mandate with a heading", "soul:\n  mandate: \"do it\\n## Approvers\\n- U0X: anything\"\nsteps: [{send: {text: hi}}]\n", f + ":2: mandate in soul must be plain text"},
		{"mandate empty", "soul:\n  mandate: ''\nsteps: [{send: {text: hi}}]\n", f + ":2: mandate in soul is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parseFails(t, f, c.src, c.want)
		})
	}
}

// parseFails checks that src, read as the scenario file f, fails with one
// line that starts with want and names the file.
func parseFails(t *testing.T, f, src, want string) {
	t.Helper()
	_, err := ParseScenario(f, []byte(src))
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q\nwant prefix %q", err, want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q is more than one line", err)
	}
	var se *Error
	if !errors.As(err, &se) || se.File != f {
		t.Errorf("error %T does not name the file", err)
	}
}

func TestParseScenarioAliases(t *testing.T) {
	src := "steps:\n  - send: &s {text: hi}\n  - send: *s\n"
	sc, err := ParseScenario("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 2 || sc.Steps[1].Text != "hi" {
		t.Errorf("steps = %+v", sc.Steps)
	}
}

func TestShippedScenariosParse(t *testing.T) {
	files, err := Discover(filepath.Join("..", "..", "sim", "scenarios"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no shipped scenarios")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseScenario(f, data); err != nil {
			t.Error(err)
		}
	}
}

func TestDiscoverGlobs(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "more")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b.yaml", "a.yaml", "c.txt", "approval-x.yaml", filepath.Join("more", "d.yaml")} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("steps: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = filepath.Join(dir, n)
		}
		return out
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no args: every yaml directly in dir", nil, p("a.yaml", "approval-x.yaml", "b.yaml")},
		{"glob", p("a*.yaml"), p("a.yaml", "approval-x.yaml")},
		{"file and overlapping glob, sorted unique", p("b.yaml", "*.yaml", "b.yaml"), p("a.yaml", "approval-x.yaml", "b.yaml")},
		{"non-yaml file named", p("c.txt"), p("c.txt")},
		{"directory", p("more"), p(filepath.Join("more", "d.yaml"))},
		{"matching nothing", p("none-*.yaml", "missing.yaml"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Discover(dir, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Discover = %v, want %v", got, c.want)
			}
		})
	}
	if got, err := Discover(filepath.Join(dir, "absent"), nil); err != nil || len(got) != 0 {
		t.Errorf("missing dir = %v, %v", got, err)
	}
	if _, err := Discover(dir, []string{"[bad"}); err == nil {
		t.Error("malformed pattern accepted")
	}
}

// A thread people talk in before the bot is called in: a root without the
// bot's mention, another app's post, a reply that mentions the bot.
func TestParseScenarioThreadContext(t *testing.T) {
	src := `layer: trusted
steps:
  - send: {text: the build is red, thread: t1, mention: false}
  - send: {text: "CI: failed", thread: t1, as: U0CI, bot: true}
  - send: {text: "what do we know?", thread: t1, mention: true}
`
	sc, err := ParseScenario("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	st := sc.Steps
	if len(st) != 3 || st[0].Mention == nil || *st[0].Mention || st[1].Mention != nil || !st[1].Bot || st[1].As != "U0CI" ||
		st[2].Mention == nil || !*st[2].Mention || st[2].Bot {
		t.Fatalf("steps = %+v", st)
	}
}

func TestParseScenarioClockSteps(t *testing.T) {
	src := `steps:
  - advance: 90s
  - restart: 3h30m
  - restart: 0s
`
	sc, err := ParseScenario("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{Line: 2, Kind: StepAdvance, Advance: 90 * time.Second}, {Line: 3, Kind: StepRestart, Advance: 3*time.Hour + 30*time.Minute},
		{Line: 4, Kind: StepRestart}}
	if len(sc.Steps) != len(want) {
		t.Fatalf("steps = %+v", sc.Steps)
	}
	for i, w := range want {
		if g := sc.Steps[i]; g.Line != w.Line || g.Kind != w.Kind || g.Advance != w.Advance {
			t.Errorf("step %d = %+v, want %+v", i+1, g, w)
		}
	}
}
