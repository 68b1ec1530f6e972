package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/persona-runtime/agent/"

// under reports whether path is dir or below it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// vendorHomes are the SDKs that have one home each (docs/architecture.md,
// rule 5): the packages, of this module, that may import them.
var vendorHomes = map[string][]string{
	"github.com/slack-go/slack":              {"pkg/gateway/slackio", "bench"},
	"github.com/uptrace/bun":                 {"internal/store"},
	"github.com/modelcontextprotocol/go-sdk": {"pkg/tools", "internal/connect", "internal/fake", "internal/sim/toolserver"},
	"github.com/landlock-lsm/go-landlock":    {"internal/sandbox"},
	"github.com/charmbracelet":               {"internal/sim/repl"},
	"github.com/yuin/goldmark":               {"internal/mrkdwn"},
	"github.com/robfig/cron":                 {"internal/schedule"},
	"github.com/anthropics/anthropic-sdk-go": {"internal/llm", "internal/agent", "internal/ingest", "internal/soulx", "internal/sim/scripted"},
}

// onlyFrom are this module's packages that only some may import (rules 3
// and 4): the simulator is wired by cmd (and its own packages, in the order
// simRank gives; never by internal/service, which the runner boots), the
// inbox by cmd and the service; the test kit is for tests (whose imports go
// list does not count here) and the bench; deptest by no package.
var onlyFrom = map[string][]string{
	"internal/sim":     {"cmd", "internal/sim"},
	"internal/inbox":   {"cmd", "internal/service"},
	"internal/fake":    {"bench"},
	"internal/deptest": {},
}

// simRank orders the simulator's packages: internal/sim/repl (the
// interactive shell) → internal/sim/runner (boots the service, runs a
// scenario) → internal/sim/golden, platform, scripted and internal/sim itself
// (rank 0, as is any new package below internal/sim). A simulator package may
// import another only of a lower rank, or of rank 0 from rank 0: no arrow
// back, so the runner never imports the shell and the parts never import
// the runner or the shell.
var simRank = map[string]int{
	"internal/sim/repl":   2,
	"internal/sim/runner": 1,
}

// simArrow reports whether the simulator package pkg may import dep (both
// below internal/sim).
func simArrow(pkg, dep string) bool {
	rank := func(p string) int {
		for dir, r := range simRank {
			if under(p, dir) {
				return r
			}
		}
		return 0
	}
	rp, rd := rank(pkg), rank(dep)
	return rd < rp || rd == 0 && rp == 0
}

func TestSimArrow(t *testing.T) {
	for _, tc := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"internal/sim/repl", "internal/sim/runner", true},
		{"internal/sim/repl", "internal/sim/platform", true},
		{"internal/sim/runner", "internal/sim/golden", true},
		{"internal/sim/runner", "internal/sim", true},
		{"internal/sim/golden", "internal/sim/platform", true},
		{"internal/sim", "internal/sim/scripted", true},
		{"internal/sim/runner", "internal/sim/repl", false},
		{"internal/sim/golden", "internal/sim/runner", false},
		{"internal/sim/platform", "internal/sim/repl", false},
		{"internal/sim/scripted", "internal/sim/runner", false},
		{"internal/sim", "internal/sim/runner", false},
		{"internal/sim/newpart", "internal/sim/repl", false},
	} {
		if got := simArrow(tc.pkg, tc.dep); got != tc.ok {
			t.Errorf("simArrow(%s, %s) = %v, want %v", tc.pkg, tc.dep, got, tc.ok)
		}
	}
}

// TestServiceWithoutSimulator: the production service carries no
// simulator code, not even through another package.
func TestServiceWithoutSimulator(t *testing.T) {
	Check(t, module+"internal/service", map[string]string{
		module + "internal/sim": "the simulator's runner boots the service, not the other way round",
	})
}

// TestArchitecture checks docs/architecture.md's rules on every package's
// imports (not its tests').
func TestArchitecture(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH; cannot list imports")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue
		}
		seen++
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				for sdk, homes := range vendorHomes {
					if under(imp, sdk) && !within(pkg, homes) {
						t.Errorf("%s imports %s: that SDK's home is %v (rule 5)", pkg, imp, homes)
					}
				}
				continue
			}
			switch {
			case pkg == "pkg/pipeline":
				t.Errorf("pkg/pipeline imports %s: the domain package imports nothing from this module (rule 1)", dep)
			case under(pkg, "pkg") && !under(dep, "pkg"):
				t.Errorf("%s imports %s: pkg/ imports only pkg/ (rule 2)", pkg, dep)
			}
			if under(pkg, "internal/sim") && under(dep, "internal/sim") && !simArrow(pkg, dep) {
				t.Errorf("%s imports %s: the simulator's arrows go repl → runner → golden, platform, scripted, sim, never back (simRank)", pkg, dep)
			}
			for guarded, allowed := range onlyFrom {
				if under(dep, guarded) && !under(pkg, guarded) && !within(pkg, allowed) {
					t.Errorf("%s imports %s: only %v may (rules 3 and 4)", pkg, dep, allowed)
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list printed %d of this module's packages; want them all:\n%s", seen, out)
	}
}

// within reports whether pkg is one of dirs or below one.
func within(pkg string, dirs []string) bool {
	for _, d := range dirs {
		if under(pkg, d) {
			return true
		}
	}
	return false
}

// TestNoTemplateExecution: the binary executes no text or HTML template.
// Executing one reaches reflect's MethodByName, and then the linker keeps
// every exported method of every type the binary holds: one sign-in page
// rendered with html/template made the runtime's binary 49 MB instead of
// 32, and every start and simulation fault in more of it. Dependencies
// that import text/template without executing it (bun's migrations, the
// REPL's terminal colours) are left alone; the module's own packages
// import neither.
func TestNoTemplateExecution(t *testing.T) {
	why := "executing a template makes the linker keep every exported method: write the page with html.EscapeString"
	Check(t, module+"cmd/agent", map[string]string{"html/template": why})
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/persona-runtime/agent/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == "text/template" || imp == "html/template" {
				t.Errorf("%s imports %s: %s", f[0], imp, why)
			}
		}
	}
}
