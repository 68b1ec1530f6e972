package tools

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The confinement keeps the runtime's files from the tools, passes on only
// a minimal environment, and lets confined commands read the skills, the
// knowledge and the user's git configuration.
func TestNewConfinement(t *testing.T) {
	root := t.TempDir()
	home, user, dir := filepath.Join(root, "agent"), filepath.Join(root, "user"), filepath.Join(root, "wd")
	env := map[string]string{"HOME": user, "LANG": "C.UTF-8", "USER": "op", "PATH": "/opt/bin:/usr/bin",
		"LLM_API_KEY": "sk-secret", "CHAT_BOT_TOKEN": "xoxb-secret", "AGENT_DB_URL": "postgres://x", "EDITOR": "vi"}
	getenv := func(k string) string { return env[k] }
	h := Host{Home: home, Database: filepath.Join(home, "agent.db"), Dir: dir, Getenv: getenv}

	c := NewConfinement(h)
	wantDeny := []string{filepath.Join(home, ".env"), filepath.Join(home, "mcp.json"), filepath.Join(home, "agent.db"),
		filepath.Join(user, ".agent", ".env"), filepath.Join(dir, ".env")}
	if !slices.Equal(c.Deny, wantDeny) {
		t.Errorf("Deny = %q, want %q", c.Deny, wantDeny)
	}
	wantRO := []string{filepath.Join(home, "skills"), filepath.Join(home, "knowledge"),
		filepath.Join(user, ".gitconfig"), filepath.Join(user, ".config", "git", "config")}
	if !slices.Equal(c.ReadOnly, wantRO) {
		t.Errorf("ReadOnly = %q, want %q", c.ReadOnly, wantRO)
	}
	wantEnv := []string{"PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8", "HOME=" + user, "USER=op"}
	if !slices.Equal(c.Env, wantEnv) {
		t.Errorf("Env = %q, want %q", c.Env, wantEnv)
	}
	if !slices.Equal(c.BashEnv, wantEnv) {
		t.Errorf("BashEnv without a ~/.gitconfig = %q, want %q", c.BashEnv, wantEnv)
	}
	if c.ServerState != filepath.Join(home, "tool-servers") {
		t.Errorf("ServerState = %q", c.ServerState)
	}

	// With a ~/.gitconfig, Bash's git finds it through GIT_CONFIG_GLOBAL;
	// the servers' environment stays as it was.
	fake.WriteFile(t, filepath.Join(user, ".gitconfig"), "[user]\n\tname = op\n")
	c = NewConfinement(h)
	if want := append(slices.Clone(wantEnv), "GIT_CONFIG_GLOBAL="+filepath.Join(user, ".gitconfig")); !slices.Equal(c.BashEnv, want) {
		t.Errorf("BashEnv = %q, want %q", c.BashEnv, want)
	}
	if !slices.Equal(c.Env, wantEnv) {
		t.Errorf("Env with a ~/.gitconfig = %q, want %q", c.Env, wantEnv)
	}
}

// A database that is no file is not in the deny list; paths come out
// absolute, and a runtime without PATH gives its children a usual one.
func TestNewConfinementBare(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c := NewConfinement(Host{Home: "home", Getenv: func(string) string { return "" }})
	want := []string{filepath.Join(wd, "home", ".env"), filepath.Join(wd, "home", "mcp.json")}
	if !slices.Equal(c.Deny, want) {
		t.Errorf("Deny = %q, want %q", c.Deny, want)
	}
	if want := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}; !slices.Equal(c.Env, want) || !slices.Equal(c.BashEnv, want) {
		t.Errorf("Env = %q, BashEnv = %q, want %q", c.Env, c.BashEnv, want)
	}
	if want := []string{filepath.Join("home", "skills"), filepath.Join("home", "knowledge")}; !slices.Equal(c.ReadOnly, want) {
		t.Errorf("ReadOnly = %q, want %q", c.ReadOnly, want)
	}
}
