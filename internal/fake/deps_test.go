package fake_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/persona-runtime/agent/"

// deps lists the packages pkg depends on, itself last.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH; cannot list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", module+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// The kit imports nothing of the module but pkg/clock, so that the tests
// of any package, internal ones included, can use it without a cycle.
func TestKitDependsOnNoOtherPackage(t *testing.T) {
	for kit, allowed := range map[string]string{"internal/fake": "pkg/clock", "internal/fake/golden": "internal/textdiff"} {
		for _, dep := range deps(t, kit) {
			switch strings.TrimPrefix(dep, module) {
			case dep, kit, allowed:
			default:
				t.Errorf("%s depends on %s", kit, dep)
			}
		}
	}
}

// The binaries carry no fake and no testing package: the simulator swaps
// the transport for its own in-memory platform instead.
func TestBinariesDoNotCarryTheKit(t *testing.T) {
	for _, bin := range []string{"cmd/agent", "cmd/agent-sandbox"} {
		for _, dep := range deps(t, bin) {
			if dep == "testing" || strings.HasPrefix(dep, module+"internal/fake") {
				t.Errorf("%s depends on %s", bin, dep)
			}
		}
	}
}
