package soulx_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/soulx"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ soulx.Model = (*llm.Client)(nil)

// newModel returns the fake Messages API and the real client talking to it.
func newModel(t *testing.T) (*fake.Anthropic, *llm.Client) {
	t.Helper()
	f := fake.NewAnthropic(t)
	c, err := llm.New(llm.Config{BaseURL: f.URL(), APIKey: "sk-ant-test", MaxRetries: -1}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func parse(t *testing.T, src string) *persona.Persona {
	t.Helper()
	p, err := persona.Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proseManager names its manager only in prose: there is no "## Reporting".
const proseManager = `# Persona

Alice (U0ALICE) is my manager; she decides what ships.

## Identity
- Name: Ada
- Role: release assistant

## Mandate
- Own the release checklist.

## Trusted channels
- <#C0TEAM|team>
`

// complete has every required field and a channel list.
const complete = `# Persona

## Identity
- Name: Ada

## Reporting
- Manager: U0ALICE

## Mandate
- Own the release checklist.

## Trusted channels
- <#C0TEAM|team>
`

func TestExtractFillsManagerFromProse(t *testing.T) {
	f, m := newModel(t)
	f.Enqueue(fake.TextReply(`{"manager": {"userId": "U0ALICE"}}`))
	p := parse(t, proseManager)
	if got := p.Missing(); len(got) != 1 || got[0] != "manager.userId" {
		t.Fatalf("parser: missing %v, want [manager.userId]", got)
	}

	out, notes, err := soulx.Extract(t.Context(), m, "claude-haiku-4-5", []byte(proseManager), p)
	if err != nil {
		t.Fatal(err)
	}
	if out.Manager.UserID != "U0ALICE" || len(out.Missing()) != 0 {
		t.Errorf("manager = %q, missing %v", out.Manager.UserID, out.Missing())
	}
	if out.RoleOf("U0ALICE") != pipeline.RoleManager {
		t.Error("the result is not prepared: U0ALICE is not the manager")
	}
	if p.Manager.UserID != "" {
		t.Error("Extract modified its argument")
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "manager.userId") || !strings.Contains(notes[0], "U0ALICE") {
		t.Errorf("notes = %q", notes)
	}

	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "claude-haiku-4-5" || r.MaxTokens <= 0 || r.MaxTokens > 4096 {
		t.Errorf("model %q, max_tokens %d", r.Model, r.MaxTokens)
	}
	var body struct {
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Temperature == nil || *body.Temperature != 0 {
		t.Errorf("temperature not 0: %s", r.Body)
	}
	sys := r.SystemText()
	for _, want := range []string{`"manager": {"userId": string}`, `"approvers"`, "manager.userId", "Never make up an id"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if !strings.Contains(r.LastUserText(), "Alice (U0ALICE) is my manager") {
		t.Errorf("user message = %q", r.LastUserText())
	}
}

func TestExtractKeepsParsedFields(t *testing.T) {
	src := `Bob (U0BOB) stood in for Alice last summer.

## Identity
- Name: Ada

## Reporting
- Manager: U0ALICE

## Trusted channels
- <#C0TEAM|team>

## Notes
I own the release checklist and refuse to deploy on Fridays.
`
	f, m := newModel(t)
	f.Enqueue(fake.TextReply(`{"identity": {"name": "Bob's bot"}, "manager": {"userId": "U0BOB"},
		"mandate": "Own the release checklist; refuse Friday deploys."}`))
	p := parse(t, src)

	out, notes, err := soulx.Extract(t.Context(), m, "", []byte(src), p)
	if err != nil {
		t.Fatal(err)
	}
	if out.Manager.UserID != "U0ALICE" || out.Identity.Name != "Ada" {
		t.Errorf("parsed fields overridden: manager %q, name %q", out.Manager.UserID, out.Identity.Name)
	}
	if out.Mandate != "Own the release checklist; refuse Friday deploys." {
		t.Errorf("mandate = %q", out.Mandate)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "mandate") {
		t.Errorf("notes = %q", notes)
	}
	if sys := f.Requests()[0].SystemText(); !strings.Contains(sys, "Fill only these keys: identity.role, identity.voice, backupManager.userId, mandate,") {
		t.Errorf("system prompt asks for the wrong keys:\n%s", sys)
	}
}

func TestExtractFills(t *testing.T) {
	access := `## Identity
- Name: Ada

## Reporting
- Manager: U0ALICE

## Mandate
- Own the release checklist.

Anyone in <#C0TEAM|team> may ask me. Bob (<@U0BOB>) may approve Bash and skills.
Ignore Mallory, U0MAL.
`
	tests := []struct {
		name  string
		src   string
		reply string
		check func(t *testing.T, p *persona.Persona)
	}{
		{name: "fenced answer", src: proseManager,
			reply: "Here is the object:\n```json\n{\"manager\": {\"userId\": \"U0ALICE\"}}\n```\n",
			check: func(t *testing.T, p *persona.Persona) {
				if p.Manager.UserID != "U0ALICE" {
					t.Errorf("manager = %q", p.Manager.UserID)
				}
			}},
		{name: "bare mention as manager", src: proseManager,
			reply: `{"manager": "<@U0ALICE>"}`,
			check: func(t *testing.T, p *persona.Persona) {
				if p.Manager.UserID != "U0ALICE" {
					t.Errorf("manager = %q", p.Manager.UserID)
				}
			}},
		{name: "access lists from prose", src: access,
			reply: `{"trustedChannels": [{"id": "C0TEAM", "name": "#team"}],
				"approvers": [{"userId": "U0BOB", "scopes": ["Bash", "skills"]}, {"userId": "U0BOB", "scopes": ["Bash"]}],
				"blocked": ["U0MAL"], "values": ["  Ship   small. "]}`,
			check: func(t *testing.T, p *persona.Persona) {
				if p.Layer("C0TEAM", false) != pipeline.LayerTrusted || p.Trusted[0].Name != "team" {
					t.Errorf("trusted = %v", p.Trusted)
				}
				if got := p.ScopesOf("U0BOB"); len(got) != 2 || got[0] != "Bash" || got[1] != "skills" {
					t.Errorf("scopes of U0BOB = %v", got)
				}
				if !p.IsBlocked("U0MAL") || len(p.Values) != 1 || p.Values[0] != "Ship small." {
					t.Errorf("blocked %v, values %q", p.Blocked, p.Values)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, m := newModel(t)
			f.Enqueue(fake.TextReply(tt.reply))
			out, notes, err := soulx.Extract(t.Context(), m, "", []byte(tt.src), parse(t, tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) == 0 {
				t.Error("no notes")
			}
			tt.check(t, out)
		})
	}
}

func TestExtractRejects(t *testing.T) {
	withComment := proseManager + "\n<!-- Eve (U0EVE) may approve deploys. -->\n"
	tests := []struct {
		name  string
		src   string
		reply string
		want  string // in the error
	}{
		{name: "invented approver", src: proseManager,
			reply: `{"manager": {"userId": "U0ALICE"}, "approvers": [{"userId": "U0EVE", "scopes": ["Bash"]}]}`,
			want:  "U0EVE"},
		{name: "id only in a comment", src: withComment,
			reply: `{"approvers": [{"userId": "U0EVE", "scopes": ["anything"]}]}`, want: "U0EVE"},
		{name: "part of an id", src: proseManager, reply: `{"manager": {"userId": "U0AL"}}`, want: "U0AL"},
		{name: "invented channel", src: proseManager,
			reply: `{"allowedChannels": [{"id": "C0PUB"}]}`, want: "C0PUB"},
		{name: "invented id in an ignored field", src: strings.Replace(complete, "## Trusted channels\n- <#C0TEAM|team>\n", "", 1),
			reply: `{"manager": {"userId": "U0EVE"}}`, want: "U0EVE"},
		{name: "invented mention in text", src: proseManager,
			reply: `{"manager": {"userId": "U0ALICE"}, "values": ["Ask <@U0EVE> first"]}`, want: "U0EVE"},
		{name: "handle for an id", src: proseManager, reply: `{"manager": {"userId": "alice"}}`, want: `"alice"`},
		{name: "implausible scope", src: proseManager + "\nAlice approves deploys.\n",
			reply: `{"approvers": [{"userId": "U0ALICE", "scopes": ["git push"]}]}`, want: `"git push"`},
		{name: "approver without scopes", src: proseManager,
			reply: `{"approvers": [{"userId": "U0ALICE"}]}`, want: "no scopes"},
		{name: "not JSON", src: proseManager, reply: "I could not find a manager.", want: "no JSON object"},
		{name: "invalid JSON", src: proseManager, reply: `{"manager": {"userId": `, want: "not valid JSON"},
		{name: "wrong type", src: proseManager, reply: `{"approvers": "U0ALICE"}`, want: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, m := newModel(t)
			f.Enqueue(fake.TextReply(tt.reply))
			out, _, err := soulx.Extract(t.Context(), m, "", []byte(tt.src), parse(t, tt.src))
			if err == nil {
				t.Fatalf("no error; manager %q, approvers %v", out.Manager.UserID, out.Approvers)
			}
			if !errors.Is(err, soulx.ErrInvalidAnswer) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q: want ErrInvalidAnswer mentioning %q", err, tt.want)
			}
			t.Log(err)
			if out != nil {
				t.Error("a persona came back with the error")
			}
		})
	}
}

func TestExtractModelError(t *testing.T) {
	f, m := newModel(t)
	f.Enqueue(fake.APIError(400, "", "model: not found"))
	out, _, err := soulx.Extract(t.Context(), m, "", []byte(proseManager), parse(t, proseManager))
	if !errors.Is(err, llm.ErrInvalidRequest) || errors.Is(err, soulx.ErrInvalidAnswer) || out != nil {
		t.Errorf("Extract = %v, %v; want an llm.ErrInvalidRequest", out, err)
	}
}

func TestExtractNoCall(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{name: "nothing missing", src: complete},
		{name: "approvers only", src: strings.Replace(complete, "## Trusted channels\n- <#C0TEAM|team>", "## Approvers\n- <@U0BOB>: Bash", 1)},
		{name: "no text", src: "<!--\n## Reporting\n- Manager: U0ALICE\n-->\n"},
		{name: "empty", src: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, m := newModel(t)
			p := parse(t, tt.src)
			out, notes, err := soulx.Extract(t.Context(), m, "", []byte(tt.src), p)
			if err != nil || out != p || notes != nil {
				t.Errorf("Extract = %p, %q, %v; want p (%p) unchanged", out, notes, err, p)
			}
			if n := len(f.Requests()); n != 0 {
				t.Errorf("%d model requests, want 0", n)
			}
		})
	}
}
