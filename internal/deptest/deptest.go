package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// Check fails t for every package that pkg depends on, directly or not,
// that forbidden names: a key forbids that import path and every path below
// it; its value says why. Without the go command on PATH the test is
// skipped.
func Check(t testing.TB, pkg string, forbidden map[string]string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH; cannot list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != pkg {
		t.Fatalf("go list -deps printed no dependencies of %s:\n%s", pkg, out)
	}
	name := pkg[strings.LastIndexByte(pkg, '/')+1:]
	for _, dep := range deps {
		if dep == pkg {
			continue
		}
		for prefix, why := range forbidden {
			prefix = strings.TrimSuffix(prefix, "/")
			if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
				t.Errorf("%s depends on %s: forbidden (%s)", name, dep, why)
			}
		}
	}
}
