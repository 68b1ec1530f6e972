package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Open doors are said out loud, or refused.
//
// A thread in bypass runs every tool without a card: only the kernel
// sandbox stands between the model and the host. Without it
// (AGENT_SANDBOX=auto on a kernel without Landlock) bypass is refused
// unless the operator chose AGENT_SANDBOX=off, which says in so many words
// that commands run unconfined. A thread can be in bypass three ways, each closed here:
//   - the configuration (AGENT_DEFAULT_MODE, a `## Channel` `- Mode:`
//     override): the service refuses to start (checkBypass);
//   - `/mode bypass` at run time: the command refuses (commands.NoBypass);
//   - a mode stored by /mode in an earlier run (on another kernel, or with
//     AGENT_SANDBOX=off): it works as ask (capBypass).

// bypassRefusal is why no thread may run in bypass under a sandbox of
// mode and Landlock ABI abi, or "" when bypass may run: the sandbox is
// enforced, or switched off on purpose (AGENT_SANDBOX=required without
// Landlock does not start at all).
func bypassRefusal(mode sandbox.Mode, abi int) string {
	if (mode != sandbox.ModeAuto && mode != "") || abi > 0 {
		return ""
	}
	return "bypass needs the kernel sandbox and this kernel has no Landlock (AGENT_SANDBOX=auto): " +
		"set AGENT_SANDBOX=off to run bypass unconfined on purpose"
}

// bypassSources names what in the configuration puts threads in bypass:
// AGENT_DEFAULT_MODE, and the `## Channel` overrides of the channels where
// bypass is not capped (an allowed channel works as ask), in a stable
// order.
func bypassSources(cfg *config.Config, p *persona.Persona) []string {
	var channels []string
	for id, c := range p.Channels {
		if c.Mode == pipeline.ModeBypass && pipeline.EffectiveMode(p.Layer(id, false), c.Mode) == pipeline.ModeBypass {
			channels = append(channels, fmt.Sprintf("SOUL.md ## Channel %s (- Mode: bypass)", persona.ChannelRef{ID: c.ID, Name: c.Name}))
		}
	}
	slices.Sort(channels)
	if pipeline.Mode(cfg.DefaultMode) == pipeline.ModeBypass {
		return append([]string{"AGENT_DEFAULT_MODE=bypass"}, channels...)
	}
	return channels
}

// CheckBypass refuses a configuration that puts threads in bypass without
// the kernel sandbox: one line naming what asks for bypass and why it is
// refused.
func CheckBypass(cfg *config.Config, p *persona.Persona, mode sandbox.Mode, abi int) error {
	why := bypassRefusal(mode, abi)
	if why == "" {
		return nil
	}
	sources := bypassSources(cfg, p)
	if len(sources) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s, or choose another mode", strings.Join(sources, ", "), why)
}

// capBypass is t, where capped (bypass is refused here) with a bypass
// stored in an earlier run read as ask.
func capBypass(t threads, capped bool) threads {
	if !capped {
		return t
	}
	return bypassCapped{t}
}

// bypassCapped reads a stored bypass as ask.
type bypassCapped struct{ threads }

// ThreadMode is the thread's stored mode, ask for bypass.
func (b bypassCapped) ThreadMode(ctx context.Context, key string) (pipeline.Mode, error) {
	mode, err := b.threads.ThreadMode(ctx, key)
	if mode == pipeline.ModeBypass {
		return pipeline.ModeAsk, err
	}
	return mode, err
}
