package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
}

func TestSimRunReportsFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
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
