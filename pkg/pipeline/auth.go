package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Directory answers what a person is to the persona and how a channel is
// configured. *persona.Persona implements it.
type Directory interface {
	Layer(channelID string, isDM bool) Layer
	RoleOf(userID string) Role
	ScopesOf(userID string) []string
	// ChannelMode is the permission mode a `## Channel` section sets, if any.
	ChannelMode(channelID string) (Mode, bool)
	// MostPublicLayer is the most public layer the persona serves
	// (pipeline.MostPublicLayer of its channel lists).
	MostPublicLayer() Layer
}

// ThreadModes returns the permission mode set on a thread with /mode.
type ThreadModes interface {
	// ThreadMode returns "" when the thread has no mode of its own.
	ThreadMode(ctx context.Context, threadKey string) (Mode, error)
}

// permissiveness orders the modes from the strictest to the most permissive.
var permissiveness = map[Mode]int{ModePlan: 0, ModeDontAsk: 1, ModeAsk: 2, ModeAcceptEdits: 3, ModeBypass: 4}

// EffectiveMode applies the layer cap of interfaces.md: in an allowed
// (public) channel the mode is never more permissive than ask.
func EffectiveMode(layer Layer, m Mode) Mode {
	if layer == LayerAllowed && permissiveness[m] > permissiveness[ModeAsk] {
		return ModeAsk
	}
	return m
}

// ModeRules are the deployment's rules for the permission mode the auth
// stage resolves.
type ModeRules struct {
	// Default is the mode of a thread without its own in a channel without
	// an override (AGENT_DEFAULT_MODE).
	Default Mode
	// NoBypass is why no thread may run in bypass here, "" when it may
	// (the kernel sandbox's Status.BypassRefusal). Where it is refused a
	// bypass stored by /mode in an earlier run (on another kernel, or with
	// AGENT_SANDBOX=off) works as ask; the configuration cannot ask for
	// it (persona.CheckBypass refuses the start) and neither can /mode
	// (commands.NoBypass).
	NoBypass string
}

// Effective is mode m as it runs in layer: capped by the layer
// (EffectiveMode), then ask for bypass where bypass is refused.
func (r ModeRules) Effective(layer Layer, m Mode) Mode {
	m = EffectiveMode(layer, m)
	if m == ModeBypass && r.NoBypass != "" {
		return ModeAsk
	}
	return m
}

// Resolve is the thread's mode: its own (/mode), else the channel's
// override, else the default; then as it runs in layer (Effective).
func (r ModeRules) Resolve(layer Layer, threadMode Mode, channelMode Mode) Mode {
	m := r.Default
	if channelMode != "" {
		m = channelMode
	}
	if threadMode != "" {
		m = threadMode
	}
	return r.Effective(layer, m)
}

// NewAuth returns the auth stage: it resolves the sender's role and scopes,
// the thread's trust layer and permission mode (by rules), and puts them in
// the context (NewContextWithAccess) for the later stages and the tools.
func NewAuth(tracer trace.Tracer, m StageMetrics, dir Directory, modes ThreadModes, rules ModeRules) Middleware {
	if dir == nil || modes == nil {
		panic("pipeline: NewAuth needs a Directory and ThreadModes")
	}
	if _, err := ParseMode(string(rules.Default)); err != nil {
		panic("pipeline: NewAuth: " + err.Error())
	}
	return newStage("auth", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		a, err := resolveAccess(ctx, dir, modes, rules, ev)
		if err != nil {
			return OutcomeError, "", err
		}
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("role", string(a.Role)),
			attribute.String("layer", string(a.Layer)), attribute.String("mode", string(a.Mode)))
		return OutcomePass, "", next.Handle(NewContextWithAccess(ctx, a), ev)
	})
}

func resolveAccess(ctx context.Context, dir Directory, modes ThreadModes, rules ModeRules, ev *Event) (Access, error) {
	layer := dir.Layer(ev.ChannelID, ev.IsDM())
	threadMode, err := modes.ThreadMode(ctx, ev.ThreadKey())
	if err != nil {
		return Access{}, err
	}
	channelMode, _ := dir.ChannelMode(ev.ChannelID)
	if ev.Peer {
		// A peer never gains a person's role, whatever its user id is to
		// the persona otherwise, nor a mode that runs tools no person saw
		// asked for: at most ask, as in a public channel.
		m := rules.Resolve(layer, threadMode, channelMode)
		if permissiveness[m] > permissiveness[ModeAsk] {
			m = ModeAsk
		}
		return Access{UserID: ev.UserID, Role: RolePeer, Layer: layer, Mode: m, MostPublic: dir.MostPublicLayer()}, nil
	}
	return Access{
		UserID:     ev.UserID,
		Role:       dir.RoleOf(ev.UserID),
		Scopes:     dir.ScopesOf(ev.UserID),
		Layer:      layer,
		Mode:       rules.Resolve(layer, threadMode, channelMode),
		MostPublic: dir.MostPublicLayer(),
	}, nil
}
