package runner

import (
	"slices"
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
