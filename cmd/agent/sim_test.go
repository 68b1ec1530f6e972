package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/internal/store"
)

func TestSimRunShippedScenarios(t *testing.T) {
	dir, err := filepath.Abs("../../sim/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no shipped scenarios")
	}
	out, stderr, code := runCLI(t, map[string]string{"AGENT_SIM_SCENARIOS": dir}, "sim", "run")
	want := fmt.Sprintf("%d/%d transcripts passed", len(files), len(files))
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if n := strings.Count(out, "PASS "); n != len(files) {
		t.Fatalf("%d PASS lines for %d files", n, len(files))
	}
	// Every shipped scenario has its golden transcript, and it was compared.
	for _, f := range files {
		if _, err := os.Stat(goldenPath(f)); err != nil {
			t.Errorf("%s has no golden file: %v", filepath.Base(f), err)
		}
	}
	if strings.Contains(out, "no golden file") || strings.Contains(out, "updated") {
		t.Errorf("golden files not compared:\n%s", out)
	}
}

// A change in what the bot says fails the scenario with a diff naming the
// line; --update rewrites the golden file, after which it passes; a
// scenario without a golden file passes on its steps and says so.
func TestSimRunGoldenTranscripts(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../sim/scenarios/dm-manager-reply.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "dm.yaml")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, nil, "sim", "run", file)
	if code != 0 || !strings.Contains(out, "PASS "+file+" (no golden file)") {
		t.Fatalf("without a golden file: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, nil, "sim", "run", "--update", file)
	if code != 0 || !strings.Contains(out, "PASS "+file+" (updated dm.golden)") {
		t.Fatalf("--update: exit %d\n%s", code, out)
	}
	golden, err := os.ReadFile(goldenPath(file))
	if err != nil || !strings.Contains(string(golden), "< t1 m2 post: ack: done") {
		t.Fatalf("golden file %q, %v", golden, err)
	}
	shipped, _ := os.ReadFile("../../sim/scenarios/dm-manager-reply.golden")
	if string(golden) != string(shipped) {
		t.Errorf("the same scenario renders differently:\n%s\nvs shipped:\n%s", golden, shipped)
	}
	// Someone changes the reply: the golden file says what it was.
	edited := strings.Replace(string(golden), "post: ack: done", "post: ack: finished", 1)
	if err := os.WriteFile(goldenPath(file), []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, nil, "sim", "run", file)
	for _, want := range []string{
		"FAIL " + file + ": transcript differs from dm.golden (agent sim run --update rewrites it):",
		"    --- dm.golden", "    +++ this run", "    -< t1 m2 post: ack: finished", "    +< t1 m2 post: ack: done",
		"0/1 transcripts passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if _, _, code = runCLI(t, nil, "sim", "run", "--update", file); code != 0 {
		t.Fatal("--update failed")
	}
	if out, _, code = runCLI(t, nil, "sim", "run", file); code != 0 || !strings.Contains(out, "PASS "+file+"\n") {
		t.Errorf("after --update: exit %d\n%s", code, out)
	}
}

func TestSimRunReportsFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return fake.WriteFile(t, filepath.Join(dir, name), body) }
	good := write("good.yaml", "layer: dm\nsteps:\n  - send: {text: hi}\n  - expect_reply: {contains: 'ack: done'}\n")
	bad := write("bad.yaml", "layer: restricted\nas: member\nsteps:\n  - send: {text: hi}\n  - expect_drop: {reason: blocked}\n")
	unknown := write("unknown.yaml", "layer: dm\nsteps:\n  - send: {text: hi, colour: red}\n")
	out, _, code := runCLI(t, nil, "sim", "run", good, bad, unknown)
	for _, want := range []string{
		"PASS " + good,
		"FAIL " + bad + ": step 2 (expect_drop): expected the last message dropped with reason blocked; it was dropped with reason whitelist",
		"FAIL " + unknown + ": " + unknown + `:3: unknown key "colour" in step 1 (send)`,
		"1/3 transcripts passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	out, _, code = runCLI(t, nil, "sim", "run", filepath.Join(dir, "none-*.yaml"))
	if code != 0 || strings.TrimSpace(out) != "0/0 transcripts passed" {
		t.Fatalf("no match: exit %d, %q", code, out)
	}
	out, _, _ = runCLI(t, nil, "sim", "run", "--verbose", good)
	if !strings.Contains(out, "bot: ack: done") || !strings.Contains(out, "<@U0MGR>: hi") {
		t.Fatalf("verbose transcript missing:\n%s", out)
	}
}

// The shared configuration of `agent sim` may name the persona's Postgres:
// the simulator keeps its state to itself all the same (it would otherwise
// join the live replicas' fleet).
func TestSimNeverUsesThePersonasPostgres(t *testing.T) {
	cfg := &config.Config{DefaultMode: "bypass", AutoAllowTools: config.DefaultAutoAllowTools, IdleMinutes: config.DefaultIdleMinutes,
		MaxTurns: config.DefaultMaxTurns, PackageRunner: config.DefaultPackageRunner, LogLevel: "warn",
		DBURL: "postgres://agent:secret@127.0.0.1:1/agent?sslmode=disable"}
	w, err := startSim(t.Context(), runner.Options{Soul: []byte(testSoul), Behaviour: "reply", Config: cfg})
	if err != nil {
		t.Fatalf("startSim with a Postgres in the shared configuration: %v", err)
	}
	defer w.Close()
	if w.svc.Replicated() || store.IsPostgres(w.svc.Config().Database()) {
		t.Fatalf("the simulator's database is %q", store.Redact(w.svc.Config().Database()))
	}
}

// A scenario's temporary home is made only when the scenario writes there
// (a thread's workspace here, as the file tools make it), 0700, and is gone
// once the scenario ends either way.
func TestSimTemporaryHome(t *testing.T) {
	for _, writes := range []bool{false, true} {
		w, err := startSim(t.Context(), runner.Options{Soul: []byte(testSoul), Behaviour: "reply"})
		if err != nil {
			t.Fatal(err)
		}
		home := w.Home()
		if _, err := os.Stat(home); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the home exists before anything was written: %v", err)
		}
		if writes {
			ws, err := w.svc.Workspace("D0SIM:1.0")
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{home, filepath.Dir(ws), ws} {
				if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v, %v; want a directory 0700", dir, fi, err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(home); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("written %v: the home is left behind: %v", writes, err)
		}
	}
}

// goldenPath is the golden file of a scenario file.
var goldenPath = golden.Path

// simTest is a simulation a test started, with the service it runs.
type simTest struct {
	*runner.Sim
	svc *service.Service
}

// startSim starts a simulation as `agent sim` does: the production service
// on the simulator's platform.
func startSim(ctx context.Context, o runner.Options) (*simTest, error) {
	s, err := runner.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	return &simTest{Sim: s, svc: s.Service().(*service.Service)}, nil
}
