package persona

import (
	"fmt"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Open doors are said out loud, or refused.
//
// A thread in bypass runs every tool without a card: only the kernel
// sandbox stands between the model and the host. Where it is missing
// (AGENT_SANDBOX=auto on a kernel without Landlock: the sandbox's
// Status.BypassRefusal) bypass is refused, unless the operator chose
// AGENT_SANDBOX=off, which says in so many words that commands run
// unconfined. A thread can be in bypass three ways, each closed:
//   - the configuration (AGENT_DEFAULT_MODE, a `## Channel` `- Mode:`
//     override): the service refuses to start and doctor fails
//     (CheckBypass, here);
//   - `/mode bypass` at run time: the command refuses (commands.NoBypass);
//   - a mode stored by /mode in an earlier run (on another kernel, or with
//     AGENT_SANDBOX=off): the auth stage reads it as ask
//     (pipeline.ModeRules.NoBypass).

// BypassSources names what in the configuration puts threads in bypass:
// the default mode def (AGENT_DEFAULT_MODE), and p's `## Channel`
// overrides of the channels where bypass is not capped (in an allowed
// channel it works as ask), in a stable order.
func (p *Persona) BypassSources(def pipeline.Mode) []string {
	var channels []string
	for id, c := range p.Channels {
		if c.Mode == pipeline.ModeBypass && pipeline.EffectiveMode(p.Layer(id, false), c.Mode) == pipeline.ModeBypass {
			channels = append(channels, fmt.Sprintf("SOUL.md ## Channel %s (- Mode: bypass)", ChannelRef{ID: c.ID, Name: c.Name}))
		}
	}
	slices.Sort(channels)
	if def == pipeline.ModeBypass {
		return append([]string{"AGENT_DEFAULT_MODE=bypass"}, channels...)
	}
	return channels
}

// CheckBypass refuses a configuration that puts threads in bypass (the
// default mode def and p's overrides, BypassSources) where bypass is
// refused for the reason refusal ("" when bypass may run): one line
// naming what asks for bypass and why it is refused.
func (p *Persona) CheckBypass(def pipeline.Mode, refusal string) error {
	if refusal == "" {
		return nil
	}
	sources := p.BypassSources(def)
	if len(sources) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s, or choose another mode", strings.Join(sources, ", "), refusal)
}
