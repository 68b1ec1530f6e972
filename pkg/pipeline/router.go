package pipeline

import (
	"context"
	"fmt"
)

// kindRouter sends each event to the rule registered for its kind: the one
// place a stage says what each kind of event gets. A kind's other
// properties (whether it waits in its thread's queue) are in kinds.
type kindRouter struct {
	stage string // names the stage in panics and errors
	rules [len(kinds)]rule
}

// route registers r for kind k, at construction. A second rule for a kind
// is a wiring mistake and panics, as asynq's ServeMux panics on a pattern
// registered twice: otherwise one of the two would be silently dead.
func (kr *kindRouter) route(k Kind, r rule) {
	switch {
	case r == nil:
		panic(fmt.Sprintf("pipeline: %s: a nil rule for %s events", kr.stage, k))
	case k == 0 || int(k) >= len(kr.rules):
		panic(fmt.Sprintf("pipeline: %s: a rule for kind %d, which is not a kind", kr.stage, k))
	case kr.rules[k] != nil:
		panic(fmt.Sprintf("pipeline: %s: a second rule for %s events", kr.stage, k))
	}
	kr.rules[k] = r
}

// dispatch is a rule: it runs the rule of ev's kind. An event of a kind
// that has none (a reply looping back, a zero Kind) is an error of the
// event, passed on; the stage did no work of its own on it.
func (kr *kindRouter) dispatch(ctx context.Context, ev *Event, next Handler) (outcome, reason string, err error) {
	if int(ev.Kind) < len(kr.rules) {
		if r := kr.rules[ev.Kind]; r != nil {
			return r(ctx, ev, next)
		}
	}
	return OutcomeDone, "", fmt.Errorf("%s: no handler for a %s event", kr.stage, ev.Kind)
}
