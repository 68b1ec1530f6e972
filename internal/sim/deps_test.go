package sim_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/persona-runtime/agent/"

// simTree are the simulator's packages, each with the packages of the tree
// it may import: the REPL drives the runner; the runner plays scenarios on
// the platform with the scripted model and renders golden transcripts; the
// platform and the scripted model stand alone; the recorder writes
// scenarios (and checks that they parse).
var simTree = map[string][]string{
	"internal/sim":          {"internal/sim/scripted"},
	"internal/sim/platform": nil,
	"internal/sim/scripted": nil,
	"internal/sim/golden":   {"internal/sim", "internal/sim/platform"},
	"internal/sim/runner":   {"internal/sim", "internal/sim/golden", "internal/sim/platform", "internal/sim/scripted", "internal/sim/toolserver"},
	"internal/sim/repl":     {"internal/sim", "internal/sim/platform", "internal/sim/runner", "internal/sim/scripted"},
	"internal/sim/record":   {"internal/sim", "internal/sim/scripted"},
	// the tool server with per-person sign-in stands alone
	"internal/sim/toolserver": nil,
}

// TestImports fails when a package outside cmd imports the simulator (it is
// no part of the runtime), or when an arrow inside the tree runs the wrong
// way.
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH; cannot list imports")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		allowed, inTree := simTree[pkg]
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || (dep != "internal/sim" && !strings.HasPrefix(dep, "internal/sim/")) {
				continue
			}
			switch {
			case strings.HasPrefix(pkg, "cmd/"):
			case !inTree:
				t.Errorf("%s imports %s: only cmd and the simulator's own packages may", pkg, dep)
			case !slices.Contains(allowed, dep):
				t.Errorf("%s imports %s: the simulator's packages import %v only", pkg, dep, allowed)
			}
		}
	}
}
