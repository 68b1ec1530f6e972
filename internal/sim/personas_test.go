package sim

import (
	"strings"
	"testing"
)

func TestParsePersonas(t *testing.T) {
	src := `layer: trusted
soul:
  peers: [U0ONC]
personas:
  - name: Oncall
    user: U0ONC
    soul:
      peers: [U0BOT]
    model:
      - [{tools: [{name: mcp__agent_chat__reply, input: {text: "<@U0BOT> done"}}]}]
  - name: Docs
    user: U0DOCS
    agent_behavior: echo
steps:
  - send: {text: hi, persona: Oncall}
  - expect_reply: {persona: Oncall, contains: done}
  - expect_drop: {persona: Simbot, reason: peer_limit}
  - expect_reply: {contains: hi}
`
	sc, err := ParseScenario("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Personas) != 2 {
		t.Fatalf("personas = %+v", sc.Personas)
	}
	onc, docs := sc.Personas[0], sc.Personas[1]
	if onc.Name != "Oncall" || onc.User != "U0ONC" || onc.Line != 5 || onc.AgentBehavior != "recorded" || len(onc.Model) != 1 ||
		onc.Soul == nil || len(*onc.Soul.Peers) != 1 {
		t.Fatalf("Oncall = %+v", onc)
	}
	if docs.AgentBehavior != "echo" || docs.Model != nil || docs.Soul != nil {
		t.Fatalf("Docs = %+v", docs)
	}
	if got := strings.Join(sc.PersonaNames(), ","); got != "Simbot,Oncall,Docs" {
		t.Fatalf("names = %s", got)
	}
	for i, want := range []string{"Oncall", "Oncall", "Simbot", ""} {
		if sc.Steps[i].Persona != want {
			t.Errorf("step %d persona = %q, want %q", i+1, sc.Steps[i].Persona, want)
		}
	}
	// Its SOUL.md is the sim world's, in its own name, read by the real parser.
	p, err := onc.World().Persona()
	if err != nil {
		t.Fatal(err)
	}
	if p.Identity.Name != "Oncall" || !p.IsPeer(BotUser) {
		t.Fatalf("Oncall's SOUL.md: name %q, peer %s: %v", p.Identity.Name, BotUser, p.IsPeer(BotUser))
	}
}

func TestParsePersonasErrors(t *testing.T) {
	const f = "sim/scenarios/x.yaml"
	steps := "steps: [{send: {text: hi}}]\n"
	cases := []struct{ name, src, want string }{
		{"not a list", "personas: {name: Oncall}\n" + steps, f + ":1: personas is a list of personas"},
		{"empty list", "personas: []\n" + steps, f + ":1: personas is a list of personas"},
		{"item not a mapping", "personas: [Oncall]\n" + steps, f + ":1: persona 1 is a mapping, like `{name: Oncall, user: U0ONC}`"},
		{"unknown key", "personas:\n  - name: Oncall\n    user: U0ONC\n    role: sre\n" + steps,
			f + `:4: unknown key "role" in persona 1 (want name, user, soul, agent_behavior or model)`},
		{"no name", "personas:\n  - user: U0ONC\n" + steps, f + ":2: persona 1 needs a name"},
		{"name of the scenario's own", "personas:\n  - {name: simbot, user: U0ONC}\n" + steps, f + `:2: name in persona 1: "simbot" is taken`},
		{"name twice", "personas:\n  - {name: Oncall, user: U0ONC}\n  - {name: Oncall, user: U0TWO}\n" + steps, f + `:3: name in persona 2: "Oncall" is taken`},
		{"no user", "personas:\n  - name: Oncall\n" + steps, f + ":2: persona 1 (Oncall) needs user, its bot user id (U…)"},
		{"user not an id", "personas:\n  - {name: Oncall, user: oncall}\n" + steps, f + `:2: user in persona 1: "oncall" is not a user id (U…)`},
		{"user is the bot", "personas:\n  - {name: Oncall, user: U0BOT}\n" + steps, f + ":2: user in persona 1: U0BOT is already someone in the sim world"},
		{"user is a person", "personas:\n  - {name: Oncall, user: U0ALICE}\n" + steps, f + ":2: user in persona 1: U0ALICE is already someone"},
		{"user twice", "personas:\n  - {name: Oncall, user: U0ONC}\n  - {name: Docs, user: U0ONC}\n" + steps, f + ":3: user in persona 2: U0ONC is already someone"},
		{"bad soul", "personas:\n  - name: Oncall\n    user: U0ONC\n    soul: {peers: [bot]}\n" + steps, f + `:4: peers in soul: ## Peers: "bot" is not a user id`},
		{"bad behaviour", "personas:\n  - {name: Oncall, user: U0ONC, agent_behavior: dance}\n" + steps, f + `:2: unknown agent_behavior "dance" in persona 1`},
		{"model and behaviour", "personas:\n  - name: Oncall\n    user: U0ONC\n    agent_behavior: echo\n    model: [[{text: hi}]]\n" + steps,
			f + ":2: model in persona 1: the recorded answers are the agent's behaviour"},
		{"unknown step persona", "personas:\n  - {name: Oncall, user: U0ONC}\nsteps:\n  - send: {text: hi}\n  - expect_reply: {contains: hi, persona: Docs}\n",
			f + `:5: unknown persona "Docs" in step 2 (expect_reply) (want Simbot or Oncall)`},
		{"step persona without a team", "steps:\n  - send: {text: hi, persona: Oncall}\n", f + `:2: unknown persona "Oncall" in step 1 (send) (want Simbot)`},
		{"empty step persona", "steps:\n  - expect_drop: {reason: self, persona: ''}\n", f + ":2: persona in step 1 (expect_drop) is empty"},
		{"persona on a click", "steps:\n  - click: {action: approve, persona: Oncall}\n", f + `:2: unknown key "persona" in step 1 (click)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parseFails(t, f, c.src, c.want)
		})
	}
}
