package sim

import (
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/sim/scripted"
)

// `model:` holds a recorded thread's answers turn by turn; the scenario's
// behaviour is then the recorded one.
func TestParseScenarioRecordedModel(t *testing.T) {
	src := `model:
  - - text: thinking
      tools:
        - name: mcp__agent_chat__reply
          input: {text: "hi <@U0ALICE>", n: 2}
    - {}
  - []
steps:
  - send: {text: hello}
`
	sc, err := ParseScenario("rec.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if sc.AgentBehavior != scripted.Recorded || len(sc.Model) != 2 || len(sc.Model[0]) != 2 || len(sc.Model[1]) != 0 {
		t.Fatalf("behaviour %q, model %+v", sc.AgentBehavior, sc.Model)
	}
	a := sc.Model[0][0]
	if a.Text != "thinking" || len(a.Tools) != 1 || a.Tools[0].Name != "mcp__agent_chat__reply" || string(a.Tools[0].Input) != `{"n":2,"text":"hi \u003c@U0ALICE\u003e"}` {
		t.Errorf("answer %+v input %s", a, a.Tools[0].Input)
	}
}

// A malformed `model:` is an error naming the file and line.
func TestParseScenarioRecordedModelErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"model: {a: 1}\nsteps:\n  - send: {text: x}\n", "rec.yaml:1: model is a list of turns"},
		{"model:\n  - {text: x}\nsteps:\n  - send: {text: x}\n", "rec.yaml:2: model: turn 1 is a list of answers"},
		{"model:\n  - - {txt: x}\nsteps:\n  - send: {text: x}\n", `rec.yaml:2: unknown key "txt" in model turn 1 answer 1 (want text or tools)`},
		{"model:\n  - - tools: [{input: {}}]\nsteps:\n  - send: {text: x}\n", "rec.yaml:2: a tool call in model turn 1 answer 1 has no name"},
		{"model:\n  - - tools: [{name: x, input: [1]}]\nsteps:\n  - send: {text: x}\n", "rec.yaml:2: input in model turn 1 answer 1 must be a mapping"},
		{"agent_behavior: echo\nmodel: []\nsteps:\n  - send: {text: x}\n", "leave agent_behavior out"},
	} {
		_, err := ParseScenario("rec.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
}
