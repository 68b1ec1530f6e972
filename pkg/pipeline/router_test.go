package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestKindRouterPanicsOnWiringMistakes(t *testing.T) {
	pass := func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		return OutcomePass, "", next.Handle(ctx, ev)
	}
	tests := []struct {
		name  string
		wire  func(*kindRouter)
		panic string // a substring of the panic message
	}{
		{"a kind twice", func(r *kindRouter) { r.route(KindMessage, pass); r.route(KindMessage, pass) }, "test: a second rule for message events"},
		{"a nil rule", func(r *kindRouter) { r.route(KindAction, nil) }, "test: a nil rule for action events"},
		{"the zero kind", func(r *kindRouter) { r.route(0, pass) }, "test: a rule for kind 0, which is not a kind"},
		{"no such kind", func(r *kindRouter) { r.route(Kind(len(kinds)), pass) }, "which is not a kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				tt.wire(&kindRouter{stage: "test"})
			}()
			if msg := fmt.Sprint(got); got == nil || !strings.Contains(msg, tt.panic) {
				t.Errorf("panic = %v, want one containing %q", got, tt.panic)
			}
		})
	}
}

func TestKindRouterDispatch(t *testing.T) {
	r := &kindRouter{stage: "test"}
	for _, k := range []Kind{KindMessage, KindAction} {
		r.route(k, func(context.Context, *Event, Handler) (string, string, error) {
			return OutcomeDone, k.String(), nil
		})
	}
	for _, k := range []Kind{KindMessage, KindAction} {
		if outcome, reason, err := r.dispatch(context.Background(), &Event{Kind: k}, nil); outcome != OutcomeDone || reason != k.String() || err != nil {
			t.Errorf("%s: dispatch = %q, %q, %v; want its own rule's answer", k, outcome, reason, err)
		}
	}
	for _, k := range []Kind{0, KindReply, Kind(200)} {
		_, _, err := r.dispatch(context.Background(), &Event{Kind: k}, nil)
		if want := "test: no handler for a " + k.String() + " event"; err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", k, err, want)
		}
	}
}
