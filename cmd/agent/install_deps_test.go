package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallDepsCommand(t *testing.T) {
	write := func(home, name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name     string
		manifest string
		args     []string
		code     int
		out, err string
	}{
		{"no manifest", "", nil, 0, "nothing to install", ""},
		{"invalid slug", `{"skills":[{"slug":"Bad_Slug"}]}`, nil, 1, "", `invalid slug "Bad_Slug"`},
		{"mixed modes", `{"skills":[{"source":"acme/tools","git":"github.com:acme/tools"}]}`, nil, 1, "", "mixed modes are invalid"},
		{"frozen without lock", `{"skills":[{"source":"acme/deploy-kit@v1"}]}`, []string{"--frozen"}, 1, "", `lockfile does not cover manifest entry "deploy-kit"`},
		{"check drift", `{"skills":[{"source":"acme/deploy-kit"}]}`, []string{"--check"}, 1, "deploy-kit", "drift"},
		{"two modes", `{"skills":[]}`, []string{"--check", "--update"}, 1, "", "only one of"},
		{"empty manifest is covered", `{"skills":[]}`, []string{"--check"}, 0, "agent.lock covers agent.json", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.manifest != "" {
				write(home, "agent.json", tc.manifest)
			}
			out, stderr, code := runCLI(t, map[string]string{"AGENT_HOME": home}, append([]string{"install-deps"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(stderr, tc.err) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out, stderr)
			}
		})
	}
}
