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

// ResolveMode is the thread's mode: its own (/mode), else the channel's
// override, else the default; then capped by the layer.
func ResolveMode(layer Layer, threadMode Mode, channelMode Mode, def Mode) Mode {
	m := def
	if channelMode != "" {
		m = channelMode
	}
	if threadMode != "" {
		m = threadMode
	}
	return EffectiveMode(layer, m)
}

// NewAuth returns the auth stage: it resolves the sender's role and scopes,
// the thread's trust layer and permission mode, and puts them in the context
// (NewContextWithAccess) for the later stages and the tools.
func NewAuth(tracer trace.Tracer, m StageMetrics, dir Directory, modes ThreadModes, def Mode) Middleware {
	if dir == nil || modes == nil {
		panic("pipeline: NewAuth needs a Directory and ThreadModes")
	}
	if _, err := ParseMode(string(def)); err != nil {
		panic("pipeline: NewAuth: " + err.Error())
	}
	return newStage("auth", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		a, err := resolveAccess(ctx, dir, modes, def, ev)
		if err != nil {
			return OutcomeError, "", err
		}
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("role", string(a.Role)),
			attribute.String("layer", string(a.Layer)), attribute.String("mode", string(a.Mode)))
		return OutcomePass, "", next.Handle(NewContextWithAccess(ctx, a), ev)
	})
}

func resolveAccess(ctx context.Context, dir Directory, modes ThreadModes, def Mode, ev *Event) (Access, error) {
	layer := dir.Layer(ev.ChannelID, ev.IsDM())
	threadMode, err := modes.ThreadMode(ctx, ev.ThreadKey())
	if err != nil {
		return Access{}, err
	}
	channelMode, _ := dir.ChannelMode(ev.ChannelID)
	return Access{
		UserID:     ev.UserID,
		Role:       dir.RoleOf(ev.UserID),
		Scopes:     dir.ScopesOf(ev.UserID),
		Layer:      layer,
		Mode:       ResolveMode(layer, threadMode, channelMode, def),
		MostPublic: dir.MostPublicLayer(),
	}, nil
}
