package pipeline_test

import (
	"os/exec"
	"strings"
	"testing"
)

const thisPackage = "github.com/persona-runtime/agent/pkg/pipeline"

// forbiddenDeps are the packages pipeline must never depend on, with why.
// A path also forbids everything below it.
var forbiddenDeps = map[string]string{
	"github.com/slack-go/slack":              "only the gateway knows the chat platform",
	"github.com/uptrace/bun":                 "storage is behind interfaces",
	"modernc.org/sqlite":                     "storage is behind interfaces",
	"github.com/anthropics/anthropic-sdk-go": "the model client lives in internal/llm",
	"github.com/modelcontextprotocol/go-sdk": "the tool servers live outside the domain package",
	"github.com/prometheus/":                 "stages report through StageMetrics and DropCounter; internal/metrics implements them over Prometheus",
	"github.com/persona-runtime/agent/":      "pipeline is the domain package: the rest of the module imports it, never the reverse",
}

// TestDeps fails if pipeline gains a forbidden dependency, directly or not.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH; cannot list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", thisPackage).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", thisPackage, err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != thisPackage {
		t.Fatalf("go list -deps printed no dependencies of %s:\n%s", thisPackage, out)
	}
	for _, dep := range deps {
		if dep == thisPackage {
			continue
		}
		for prefix, why := range forbiddenDeps {
			if dep == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(dep, strings.TrimSuffix(prefix, "/")+"/") {
				t.Errorf("pipeline depends on %s: forbidden (%s)", dep, why)
			}
		}
	}
}
