package runner

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/persona-runtime/agent/internal/sim"
)

// A scenario whose agent runs a command starts first: its sandboxed
// process is mostly waiting, which the others fill. A scenario that did not
// load does not run.
func TestRunOrder(t *testing.T) {
	sc := func(behaviour string) *sim.Scenario { return &sim.Scenario{AgentBehavior: behaviour} }
	got := runOrder([]*sim.Scenario{sc("reply"), sc("events"), nil, sc("echo"), sc("events")})
	if want := []int{1, 4, 0, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// each calls fn once for every index, however many run at once.
func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 64} {
		calls := make([]int32, n)
		each(n, func(i int) { atomic.AddInt32(&calls[i], 1) })
		for i, c := range calls {
			if c != 1 {
				t.Fatalf("n=%d: index %d called %d times", n, i, c)
			}
		}
	}
}
