package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakeDirectory is a pipeline.Directory scripted by its fields.
type fakeDirectory struct {
	LayerFn       func(channelID string, isDM bool) pipeline.Layer
	RoleOfFn      func(userID string) pipeline.Role
	ScopesOfFn    func(userID string) []string
	ChannelModeFn func(channelID string) (pipeline.Mode, bool)
	// MostPublic is what MostPublicLayer returns.
	MostPublic pipeline.Layer
}

func (d *fakeDirectory) MostPublicLayer() pipeline.Layer { return d.MostPublic }

func (d *fakeDirectory) Layer(channelID string, isDM bool) pipeline.Layer {
	return d.LayerFn(channelID, isDM)
}
func (d *fakeDirectory) RoleOf(userID string) pipeline.Role { return d.RoleOfFn(userID) }
func (d *fakeDirectory) ScopesOf(userID string) []string    { return d.ScopesOfFn(userID) }
func (d *fakeDirectory) ChannelMode(channelID string) (pipeline.Mode, bool) {
	return d.ChannelModeFn(channelID)
}

// worldDirectory is the sim world; channelModes are the `## Channel` overrides.
func worldDirectory(channelModes map[string]pipeline.Mode) *fakeDirectory {
	return &fakeDirectory{
		LayerFn:    worldLayer,
		MostPublic: pipeline.LayerAllowed, // the world has an allowed channel
		RoleOfFn: func(u string) pipeline.Role {
			switch u {
			case manager:
				return pipeline.RoleManager
			case backup:
				return pipeline.RoleBackup
			case approver:
				return pipeline.RoleApprover
			}
			return pipeline.RoleMember
		},
		ScopesOfFn: func(u string) []string {
			switch u {
			case manager, backup:
				return []string{"anything"}
			case approver:
				return []string{"Bash", "skills"}
			}
			return nil
		},
		ChannelModeFn: func(c string) (pipeline.Mode, bool) {
			m, ok := channelModes[c]
			return m, ok
		},
	}
}

// fakeModes is a pipeline.ThreadModes scripted by its field.
type fakeModes struct {
	ThreadModeFn func(ctx context.Context, threadKey string) (pipeline.Mode, error)
}

func (m *fakeModes) ThreadMode(ctx context.Context, threadKey string) (pipeline.Mode, error) {
	return m.ThreadModeFn(ctx, threadKey)
}

func threadModes(modes map[string]pipeline.Mode) *fakeModes {
	return &fakeModes{ThreadModeFn: func(_ context.Context, k string) (pipeline.Mode, error) { return modes[k], nil }}
}

func TestAuthAccessInContext(t *testing.T) {
	tests := []struct {
		name string
		ev   *pipeline.Event
		want pipeline.Access
	}{
		{"manager in DM", msg("E1", dmCh, manager, ""),
			pipeline.Access{UserID: manager, Role: pipeline.RoleManager, Scopes: []string{"anything"}, Layer: pipeline.LayerDM, Mode: pipeline.ModeBypass}},
		{"approver in trusted", msg("E1", trustedCh, approver, "1.0"),
			pipeline.Access{UserID: approver, Role: pipeline.RoleApprover, Scopes: []string{"Bash", "skills"}, Layer: pipeline.LayerTrusted, Mode: pipeline.ModeBypass}},
		{"member in allowed is capped", msg("E1", allowedCh, member, "1.0"),
			pipeline.Access{UserID: member, Role: pipeline.RoleMember, Layer: pipeline.LayerAllowed, Mode: pipeline.ModeAsk}},
		{"backup in restricted", msg("E1", randomCh, backup, ""),
			pipeline.Access{UserID: backup, Role: pipeline.RoleBackup, Scopes: []string{"anything"}, Layer: pipeline.LayerRestricted, Mode: pipeline.ModeBypass}},
		{"click", click("action:T1", trustedCh, approver),
			pipeline.Access{UserID: approver, Role: pipeline.RoleApprover, Scopes: []string{"Bash", "skills"}, Layer: pipeline.LayerTrusted, Mode: pipeline.ModeBypass}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tracer, sr := newTracer()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewAuth(tracer, nil, worldDirectory(nil), threadModes(nil), pipeline.ModeRules{Default: pipeline.ModeBypass}))
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if !next.ran() {
				t.Fatal("next did not run")
			}
			got, ok := pipeline.AccessFromContext(next.ctx)
			if !ok {
				t.Fatal("no Access in next's context")
			}
			if got.UserID != tt.want.UserID || got.Role != tt.want.Role || got.Layer != tt.want.Layer ||
				got.Mode != tt.want.Mode || !slices.Equal(got.Scopes, tt.want.Scopes) || got.MostPublic != pipeline.LayerAllowed {
				t.Errorf("Access = %+v, want %+v", got, tt.want)
			}
			attrs := spanAttrs(endedSpan(t, sr, "pipeline.auth"))
			if attrs["role"] != string(tt.want.Role) || attrs["layer"] != string(tt.want.Layer) ||
				attrs["mode"] != string(tt.want.Mode) || attrs["outcome"] != pipeline.OutcomePass {
				t.Errorf("span attributes = %v", attrs)
			}
		})
	}
}

func TestAccessFromContextEmpty(t *testing.T) {
	if a, ok := pipeline.AccessFromContext(context.Background()); ok {
		t.Errorf("AccessFromContext(empty) = %+v, true", a)
	}
}

// TestAuthModeResolution: the thread's /mode beats the channel override,
// which beats the default; then the allowed layer caps the result.
func TestAuthModeResolution(t *testing.T) {
	const thread = "1.0"
	tests := []struct {
		name        string
		channel     string
		threadMode  pipeline.Mode
		channelMode pipeline.Mode
		def         pipeline.Mode
		want        pipeline.Mode
	}{
		{"default only", trustedCh, "", "", pipeline.ModeAcceptEdits, pipeline.ModeAcceptEdits},
		{"channel override beats default", trustedCh, "", pipeline.ModePlan, pipeline.ModeBypass, pipeline.ModePlan},
		{"thread mode beats channel and default", trustedCh, pipeline.ModeDontAsk, pipeline.ModePlan, pipeline.ModeBypass, pipeline.ModeDontAsk},
		{"thread mode beats default", trustedCh, pipeline.ModeAsk, "", pipeline.ModeBypass, pipeline.ModeAsk},
		{"restricted keeps bypass", randomCh, "", "", pipeline.ModeBypass, pipeline.ModeBypass},
		{"DM keeps accept-edits", dmCh, pipeline.ModeAcceptEdits, "", pipeline.ModeAsk, pipeline.ModeAcceptEdits},
		{"allowed caps default bypass", allowedCh, "", "", pipeline.ModeBypass, pipeline.ModeAsk},
		{"allowed caps channel accept-edits", allowedCh, "", pipeline.ModeAcceptEdits, pipeline.ModePlan, pipeline.ModeAsk},
		{"allowed caps thread bypass", allowedCh, pipeline.ModeBypass, pipeline.ModePlan, pipeline.ModePlan, pipeline.ModeAsk},
		{"allowed keeps thread plan", allowedCh, pipeline.ModePlan, "", pipeline.ModeBypass, pipeline.ModePlan},
		{"allowed keeps dont-ask", allowedCh, "", pipeline.ModeDontAsk, pipeline.ModeBypass, pipeline.ModeDontAsk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := msg("E1", tt.channel, member, thread)
			modes := map[string]pipeline.Mode{}
			if tt.threadMode != "" {
				modes[ev.ThreadKey()] = tt.threadMode
			}
			channels := map[string]pipeline.Mode{}
			if tt.channelMode != "" {
				channels[tt.channel] = tt.channelMode
			}
			tracer, _ := newTracer()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewAuth(tracer, nil, worldDirectory(channels), threadModes(modes), pipeline.ModeRules{Default: tt.def}))
			if err := h.Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			a, _ := pipeline.AccessFromContext(next.ctx)
			if a.Mode != tt.want {
				t.Errorf("Mode = %q, want %q", a.Mode, tt.want)
			}
			if got := (pipeline.ModeRules{Default: tt.def}).Resolve(worldLayer(tt.channel, ev.IsDM()), tt.threadMode, tt.channelMode); got != tt.want {
				t.Errorf("Resolve = %q, want %q", got, tt.want)
			}
		})
	}
}

var (
	allModes  = []pipeline.Mode{pipeline.ModeAsk, pipeline.ModeAcceptEdits, pipeline.ModeBypass, pipeline.ModePlan, pipeline.ModeDontAsk}
	allLayers = []pipeline.Layer{pipeline.LayerTrusted, pipeline.LayerAllowed, pipeline.LayerRestricted, pipeline.LayerDM}
)

// TestEffectiveMode covers every mode in every layer: only the allowed
// layer caps, and never above ask.
func TestEffectiveMode(t *testing.T) {
	capped := map[pipeline.Mode]pipeline.Mode{
		pipeline.ModeBypass:      pipeline.ModeAsk,
		pipeline.ModeAcceptEdits: pipeline.ModeAsk,
		pipeline.ModeAsk:         pipeline.ModeAsk,
		pipeline.ModePlan:        pipeline.ModePlan,
		pipeline.ModeDontAsk:     pipeline.ModeDontAsk,
	}
	for _, layer := range allLayers {
		for _, mode := range allModes {
			want := mode
			if layer == pipeline.LayerAllowed {
				want = capped[mode]
			}
			t.Run(fmt.Sprintf("%s/%s", layer, mode), func(t *testing.T) {
				if got := pipeline.EffectiveMode(layer, mode); got != want {
					t.Errorf("EffectiveMode(%s, %s) = %s, want %s", layer, mode, got, want)
				}
				// Resolve applies the same cap whichever source the mode came from.
				for _, src := range []struct {
					name                   string
					thread, channel, deflt pipeline.Mode
				}{
					{"thread", mode, pipeline.ModePlan, pipeline.ModePlan},
					{"channel", "", mode, pipeline.ModePlan},
					{"default", "", "", mode},
				} {
					if got := (pipeline.ModeRules{Default: src.deflt}).Resolve(layer, src.thread, src.channel); got != want {
						t.Errorf("Resolve from %s = %s, want %s", src.name, got, want)
					}
				}
			})
		}
	}
}

func TestNewAuthPanicsOnInvalidDefault(t *testing.T) {
	tracer, _ := newTracer()
	for _, def := range []pipeline.Mode{"", "yolo", "Bypass"} {
		t.Run(fmt.Sprintf("%q", def), func(t *testing.T) {
			v := panicValue(func() {
				pipeline.NewAuth(tracer, nil, worldDirectory(nil), threadModes(nil), pipeline.ModeRules{Default: def})
			})
			s, _ := v.(string)
			if want := fmt.Sprintf("pipeline: NewAuth: unknown permission mode %q", def); len(s) < len(want) || s[:len(want)] != want {
				t.Errorf("panic = %v, want it to start %q", v, want)
			}
		})
	}
	for _, def := range allModes {
		if v := panicValue(func() {
			pipeline.NewAuth(tracer, nil, worldDirectory(nil), threadModes(nil), pipeline.ModeRules{Default: def})
		}); v != nil {
			t.Errorf("NewAuth(%q) panicked: %v", def, v)
		}
	}
}

func TestAuthThreadModeError(t *testing.T) {
	errStore := errors.New("threads table gone")
	var asked string
	modes := &fakeModes{ThreadModeFn: func(_ context.Context, k string) (pipeline.Mode, error) {
		asked = k
		return "", errStore
	}}
	tracer, sr := newTracer()
	next := &terminal{}
	h := pipeline.Chain(next, pipeline.NewAuth(tracer, nil, worldDirectory(nil), modes, pipeline.ModeRules{Default: pipeline.ModeAsk}))
	if err := h.Handle(context.Background(), msg("E1", trustedCh, member, "1.0")); !errors.Is(err, errStore) {
		t.Fatalf("err = %v, want the store error", err)
	} else if got := pipeline.FailedStage(err); got != "auth" {
		t.Errorf("FailedStage = %q, want auth", got)
	}
	if asked != "C0TEAM:1.0" {
		t.Errorf("ThreadMode asked for %q, want the thread key", asked)
	}
	if next.ran() {
		t.Error("next ran after an error")
	}
	assertErrorSpan(t, sr, "pipeline.auth")
}

// Where bypass is refused (no kernel sandbox), a bypass stored by /mode in
// an earlier run works as ask, in every layer; every other mode, and
// bypass where it may run, is as EffectiveMode says.
func TestModeRulesBypassRefused(t *testing.T) {
	refused := pipeline.ModeRules{Default: pipeline.ModeAsk, NoBypass: "no kernel sandbox"}
	allowed := pipeline.ModeRules{Default: pipeline.ModeAsk}
	for _, layer := range allLayers {
		for _, mode := range allModes {
			t.Run(fmt.Sprintf("%s/%s", layer, mode), func(t *testing.T) {
				want := pipeline.EffectiveMode(layer, mode)
				if got := allowed.Effective(layer, mode); got != want {
					t.Errorf("Effective(%s, %s) with bypass allowed = %s, want %s", layer, mode, got, want)
				}
				if want == pipeline.ModeBypass {
					want = pipeline.ModeAsk
				}
				if got := refused.Effective(layer, mode); got != want {
					t.Errorf("Effective(%s, %s) with bypass refused = %s, want %s", layer, mode, got, want)
				}
				if got := refused.Resolve(layer, mode, pipeline.ModePlan); got != want {
					t.Errorf("Resolve(%s, thread %s) with bypass refused = %s, want %s", layer, mode, got, want)
				}
			})
		}
	}
}

// The auth stage gives a thread whose stored mode is bypass the mode ask
// where bypass is refused, and bypass where it may run.
func TestAuthStoredBypassRefused(t *testing.T) {
	for _, tt := range []struct {
		name    string
		channel string
		rules   pipeline.ModeRules
		want    pipeline.Mode
	}{
		{"refused in trusted", trustedCh, pipeline.ModeRules{Default: pipeline.ModeAsk, NoBypass: "no kernel sandbox"}, pipeline.ModeAsk},
		{"refused in restricted", randomCh, pipeline.ModeRules{Default: pipeline.ModeAsk, NoBypass: "no kernel sandbox"}, pipeline.ModeAsk},
		{"refused in a DM", dmCh, pipeline.ModeRules{Default: pipeline.ModeAsk, NoBypass: "no kernel sandbox"}, pipeline.ModeAsk},
		{"allowed in trusted", trustedCh, pipeline.ModeRules{Default: pipeline.ModeAsk}, pipeline.ModeBypass},
		{"allowed in a DM", dmCh, pipeline.ModeRules{Default: pipeline.ModeAsk}, pipeline.ModeBypass},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := msg("E1", tt.channel, manager, "1.0")
			tracer, sr := newTracer()
			next := &terminal{}
			modes := threadModes(map[string]pipeline.Mode{ev.ThreadKey(): pipeline.ModeBypass})
			h := pipeline.Chain(next, pipeline.NewAuth(tracer, nil, worldDirectory(nil), modes, tt.rules))
			if err := h.Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if a, _ := pipeline.AccessFromContext(next.ctx); a.Mode != tt.want {
				t.Errorf("Mode = %q, want %q", a.Mode, tt.want)
			}
			if attrs := spanAttrs(endedSpan(t, sr, "pipeline.auth")); attrs["mode"] != string(tt.want) {
				t.Errorf("span mode = %q, want %q", attrs["mode"], tt.want)
			}
		})
	}
}
