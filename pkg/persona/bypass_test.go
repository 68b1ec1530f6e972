package persona

import (
	"slices"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// bypassSoul has a trusted channel, an allowed one and one of neither list,
// each with a `## Channel` override in bypass, and one override in ask.
const bypassSoul = `# Persona

## Identity
- Name: Gatekeeper
- Role: ops

## Reporting
- Manager: U0MGR

## Mandate
- Runs the ops queue.

## Trusted channels
- <#C0TEAM|team>

## Allowed channels
- <#C0PUB>

## Channel <#C0TEAM|team>
- Mode: bypass

## Channel <#C0PUB>
- Mode: bypass

## Channel <#C0OPS>
- Mode: bypass

## Channel <#C0ASK>
- Mode: ask
`

// What asks for bypass is the default mode and the overrides where bypass
// is not capped: an allowed channel's works as ask and is not named.
func TestBypassSources(t *testing.T) {
	p, err := Parse("SOUL.md", []byte(bypassSoul))
	if err != nil {
		t.Fatal(err)
	}
	channels := []string{"SOUL.md ## Channel <#C0OPS> (- Mode: bypass)", "SOUL.md ## Channel <#C0TEAM|team> (- Mode: bypass)"}
	if got := p.BypassSources(pipeline.ModeAsk); !slices.Equal(got, channels) {
		t.Errorf("BypassSources(ask) = %q, want %q", got, channels)
	}
	if got, want := p.BypassSources(pipeline.ModeBypass), append([]string{"AGENT_DEFAULT_MODE=bypass"}, channels...); !slices.Equal(got, want) {
		t.Errorf("BypassSources(bypass) = %q, want %q", got, want)
	}
	plain, err := Parse("SOUL.md", []byte("# Persona\n\n## Reporting\n- Manager: U0MGR\n\n## Trusted channels\n- <#C0TEAM>\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.BypassSources(pipeline.ModeAcceptEdits); len(got) != 0 {
		t.Errorf("BypassSources without bypass = %q, want none", got)
	}
	if got := plain.BypassSources(pipeline.ModeBypass); !slices.Equal(got, []string{"AGENT_DEFAULT_MODE=bypass"}) {
		t.Errorf("BypassSources(bypass) = %q, want only the default", got)
	}
}

// A configuration asking for bypass is refused, in one line, only where
// bypass is refused.
func TestCheckBypass(t *testing.T) {
	const why = "no kernel sandbox"
	p, err := Parse("SOUL.md", []byte(bypassSoul))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Parse("SOUL.md", []byte("# Persona\n\n## Reporting\n- Manager: U0MGR\n\n## Trusted channels\n- <#C0TEAM>\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		p       *Persona
		def     pipeline.Mode
		refusal string
		want    string // the error; "" for none
	}{
		{"bypass may run", p, pipeline.ModeBypass, "", ""},
		{"nothing asks", plain, pipeline.ModeAsk, why, ""},
		{"the default asks", plain, pipeline.ModeBypass, why, "AGENT_DEFAULT_MODE=bypass: no kernel sandbox, or choose another mode"},
		{"overrides ask", p, pipeline.ModeAsk, why,
			"SOUL.md ## Channel <#C0OPS> (- Mode: bypass), SOUL.md ## Channel <#C0TEAM|team> (- Mode: bypass): no kernel sandbox, or choose another mode"},
		{"both ask", p, pipeline.ModeBypass, why,
			"AGENT_DEFAULT_MODE=bypass, SOUL.md ## Channel <#C0OPS> (- Mode: bypass), SOUL.md ## Channel <#C0TEAM|team> (- Mode: bypass): no kernel sandbox, or choose another mode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.CheckBypass(tt.def, tt.refusal)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckBypass = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("CheckBypass = %v, want %q", err, tt.want)
			}
		})
	}
}
