package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func parse(t *testing.T, env map[string]string, args ...string) *Config {
	t.Helper()
	c := &Config{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if err := c.RegisterFlags(fs, envMap(env), "json"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c.Resolve("/home/u")
	return c
}

func valid() map[string]string {
	return map[string]string{"CHAT_BOT_TOKEN": "xoxb-1", "CHAT_APP_TOKEN": "xapp-1", "LLM_API_KEY": "sk-ant-x"}
}

func TestDefaults(t *testing.T) {
	c := parse(t, nil)
	if c.DefaultMode != "ask" || c.AutoAllowTools != "Read,Grep,Glob,LS" || c.IdleMinutes != 15 ||
		c.HealthPort != 8080 || c.MaxTurns != 8 || c.PackageRunner != "npx" || c.ChatAPIURL != DefaultChatAPIURL ||
		c.MaxAttachments != 20 || c.MaxAttachmentMB != 20 || c.ContextMessages != 50 {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Home != "/home/u/.agent" || c.DBPath != "/home/u/.agent/db.sqlite" || c.Workspaces != "/home/u/.agent/workspaces" {
		t.Fatalf("paths: %s %s %s", c.Home, c.DBPath, c.Workspaces)
	}
	if c.LogFormat != "json" {
		t.Fatalf("log format %q", c.LogFormat)
	}
}

func TestFlagBeatsEnv(t *testing.T) {
	c := parse(t, map[string]string{"AGENT_IDLE_MINUTES": "0.05", "AGENT_HOME": "/srv/a"}, "--home", "/srv/b")
	if c.IdleTimeout() != 3*time.Second {
		t.Fatalf("idle %v", c.IdleTimeout())
	}
	if c.Home != "/srv/b" || c.DBPath != "/srv/b/db.sqlite" {
		t.Fatalf("home %s db %s", c.Home, c.DBPath)
	}
}

func TestEveryVariableHasAFlag(t *testing.T) {
	c := &Config{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if err := c.RegisterFlags(fs, envMap(nil), "json"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chat-api-url", "db-url",
		"llm-base-url", "model", "default-mode", "auto-allow-tools", "idle-minutes", "health-port", "home", "db-path",
		"workspaces", "skills-repo", "log-format", "soul-extract", "soul-model", "package-runner", "git-author", "max-turns"} {
		if fs.Lookup(name) == nil {
			t.Errorf("no flag --%s", name)
		}
	}
	// But the credentials: they are read from the environment alone.
	for _, name := range []string{"chat-bot-token", "chat-app-token", "chat-signing-secret", "llm-api-key", "llm-oauth-token"} {
		if fs.Lookup(name) != nil {
			t.Errorf("credential flag --%s", name)
		}
	}
}

// Every variable whose name says it holds a credential is one of
// secretSettings: a new one is read from the environment only, and refused
// as a flag.
func TestCredentialVariablesAreKnown(t *testing.T) {
	for _, s := range (&Config{}).settings("json") {
		for _, word := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASS"} {
			if strings.Contains(s.env, word) && !secretSettings[s.env] {
				t.Errorf("%s looks like a credential but is not in secretSettings", s.env)
			}
		}
	}
}

func TestRefuseCredentialFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the variable named; "" accepted
	}{
		{[]string{"start", "--chat-bot-token", "xoxb-123-456-abcdef"}, "CHAT_BOT_TOKEN"},
		{[]string{"start", "--chat-bot-token=xoxb-123-456-abcdef"}, "CHAT_BOT_TOKEN"},
		{[]string{"dev", "-chat-app-token", "xapp-1-abcdef"}, "CHAT_APP_TOKEN"},
		{[]string{"doctor", "-chat-signing-secret=abcdef0123456789"}, "CHAT_SIGNING_SECRET"},
		{[]string{"start", "--llm-api-key", "sk-ant-api03-x"}, "LLM_API_KEY"},
		{[]string{"start", "--llm-oauth-token"}, "LLM_OAUTH_TOKEN"},
		{[]string{"--llm-api-key=sk", "version"}, "LLM_API_KEY"},
		{[]string{"start", "--db-url", "postgres://agent:pg-pass@db:5432/agent"}, "AGENT_DB_URL"},
		{[]string{"start", "--db-url=postgres://agent:pg-pass@db:5432/agent"}, "AGENT_DB_URL"},
		{[]string{"start", "-db-url", "postgres://agent@db:5432/agent?password=pg-pass"}, "AGENT_DB_URL"},
		{[]string{"start", "--db-url", "postgres://agent@db:5432/agent"}, ""},
		{[]string{"start", "--db-url=postgres://db:5432/agent"}, ""},
		{[]string{"start", "--chat-api-url", "http://localhost:1/api/"}, ""},
		{[]string{"sim", "run", "--", "--chat-bot-token"}, ""},
		{[]string{"start", "chat-bot-token"}, ""},
	} {
		err := RefuseCredentialFlags(tt.args)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: refused: %v", tt.args, err)
		case tt.want == "":
		case err == nil:
			t.Errorf("%q: accepted", tt.args)
		case err.Error() != "pass "+tt.want+" in the environment or .env, not as a flag":
			t.Errorf("%q: %q", tt.args, err)
		}
		if err != nil && (strings.Contains(err.Error(), "xoxb") || strings.Contains(err.Error(), "pg-pass") || strings.Contains(err.Error(), "sk-ant")) {
			t.Errorf("%q: the error quotes the value: %v", tt.args, err)
		}
	}
}

// AGENT_ATTACHMENTS_MAX_GB takes decimals; AGENT_ATTACHMENTS_KEEP days or
// Go's units, in the environment and as a flag; a value that does not
// parse is one line naming the variable.
func TestAttachmentsQuotaAndKeep(t *testing.T) {
	c := parse(t, nil)
	if c.AttachmentsMaxGB != 2 || c.AttachmentsQuota() != 2<<30 || c.AttachmentsKeep != 30*24*time.Hour {
		t.Fatalf("defaults: %v GB (%d bytes), keep %v", c.AttachmentsMaxGB, c.AttachmentsQuota(), c.AttachmentsKeep)
	}
	c = parse(t, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "0.5", "AGENT_ATTACHMENTS_KEEP": "12h"})
	if c.AttachmentsQuota() != 1<<29 || c.AttachmentsKeep != 12*time.Hour {
		t.Fatalf("from the environment: %d bytes, keep %v", c.AttachmentsQuota(), c.AttachmentsKeep)
	}
	c = parse(t, map[string]string{"AGENT_ATTACHMENTS_KEEP": "12h"}, "--attachments-keep", "1.5d")
	if c.AttachmentsKeep != 36*time.Hour {
		t.Fatalf("from the flag: keep %v", c.AttachmentsKeep)
	}
	for env, want := range map[string]string{
		"AGENT_ATTACHMENTS_KEEP":   `AGENT_ATTACHMENTS_KEEP: "a month" is not a duration (like 30d or 12h)`,
		"AGENT_ATTACHMENTS_MAX_GB": `AGENT_ATTACHMENTS_MAX_GB: "a month" is not a number`,
	} {
		err := (&Config{}).RegisterFlags(flag.NewFlagSet("t", flag.ContinueOnError), envMap(map[string]string{env: "a month"}), "json")
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "0.5d": 12 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := ParseDays(in); err != nil || got != want {
			t.Errorf("ParseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1d", "d", "1e300d", "soon"} {
		if got, err := ParseDays(in); err == nil {
			t.Errorf("ParseDays(%q) = %v, want an error", in, got)
		}
	}
	if got := FormatDays(30 * 24 * time.Hour); got != "30d" {
		t.Errorf("FormatDays(30 days) = %q", got)
	}
}

func TestBadNumberNamesVariable(t *testing.T) {
	c := &Config{}
	err := c.RegisterFlags(flag.NewFlagSet("t", flag.ContinueOnError), envMap(map[string]string{"AGENT_IDLE_MINUTES": "soon"}), "json")
	if err == nil || !strings.Contains(err.Error(), "AGENT_IDLE_MINUTES") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartupErrors(t *testing.T) {
	cases := []struct {
		name  string
		unset []string
		set   map[string]string
		want  string
	}{
		{"bot token", []string{"CHAT_BOT_TOKEN"}, nil, "missing env CHAT_BOT_TOKEN"},
		{"app token", []string{"CHAT_APP_TOKEN"}, nil, "missing env CHAT_APP_TOKEN"},
		{"both tokens: bot first", []string{"CHAT_BOT_TOKEN", "CHAT_APP_TOKEN"}, nil, "missing env CHAT_BOT_TOKEN"},
		{"auth", []string{"LLM_API_KEY"}, nil, "missing auth: set LLM_API_KEY or LLM_OAUTH_TOKEN"},
		{"both auths", nil, map[string]string{"LLM_OAUTH_TOKEN": "sk-ant-oat"}, "conflicting auth"},
		{"gateway without model", nil, map[string]string{"LLM_BASE_URL": "http://gw"}, "missing env AGENT_MODEL"},
		{"swapped tokens", nil, map[string]string{"CHAT_BOT_TOKEN": "xapp-1", "CHAT_APP_TOKEN": "xoxb-1"}, "CHAT_BOT_TOKEN looks like an app-level token (xapp-…) and CHAT_APP_TOKEN like a bot token (xoxb-…): the two are swapped"},
		{"app token as bot token", nil, map[string]string{"CHAT_BOT_TOKEN": "xapp-1", "CHAT_APP_TOKEN": "xapp-2"}, "CHAT_BOT_TOKEN looks like an app-level token (xapp-…): set it to the Bot User OAuth Token (xoxb-…)"},
		{"user token as bot token", nil, map[string]string{"CHAT_BOT_TOKEN": "xoxp-1"}, "CHAT_BOT_TOKEN looks like a user token (xoxp-…)"},
		{"bot token as app token", nil, map[string]string{"CHAT_APP_TOKEN": "xoxb-2"}, "CHAT_APP_TOKEN looks like an OAuth token (xoxb-…): set it to an app-level token (xapp-…) with connections:write"},
		{"bad mode", nil, map[string]string{"AGENT_DEFAULT_MODE": "yolo"}, `AGENT_DEFAULT_MODE: unknown permission mode "yolo"`},
		{"bad pprof", nil, map[string]string{"AGENT_PPROF": "yes"}, `AGENT_PPROF: unknown value "yes" (want 1 or 0)`},
		{"no attachments", nil, map[string]string{"AGENT_MAX_ATTACHMENTS": "0"}, "AGENT_MAX_ATTACHMENTS: must be at least 1, got 0"},
		{"no thread context", nil, map[string]string{"AGENT_CONTEXT_MESSAGES": "0"}, "AGENT_CONTEXT_MESSAGES: must be between 1 and 1000, got 0"},
		{"thread context cap", nil, map[string]string{"AGENT_CONTEXT_MESSAGES": "1001"}, "AGENT_CONTEXT_MESSAGES: must be between 1 and 1000, got 1001"},
		{"attachment cap", nil, map[string]string{"AGENT_MAX_ATTACHMENT_MB": "0"}, "AGENT_MAX_ATTACHMENT_MB: must be between 1 and 1024, got 0"},
		{"no attachments quota", nil, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "0"}, "AGENT_ATTACHMENTS_MAX_GB: must be above 0, got 0"},
		{"negative attachments quota", nil, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "-1.5"}, "AGENT_ATTACHMENTS_MAX_GB: must be above 0, got -1.5"},
		{"attachments quota not a number", nil, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "NaN"}, "AGENT_ATTACHMENTS_MAX_GB: must be above 0, got NaN"},
		{"endless attachments quota", nil, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "+Inf"}, "AGENT_ATTACHMENTS_MAX_GB: must be at most 1048576, got +Inf"},
		{"attachments quota under a byte", nil, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "1e-12"}, "AGENT_ATTACHMENTS_MAX_GB: 1e-12 GB is less than a byte"},
		{"short attachments retention", nil, map[string]string{"AGENT_ATTACHMENTS_KEEP": "10m"}, "AGENT_ATTACHMENTS_KEEP: must be at least 1h0m0s, got 10m0s"},
		{"small attachments quota", nil, map[string]string{"AGENT_ATTACHMENTS_MAX_GB": "0.000001", "AGENT_ATTACHMENTS_KEEP": "12h"}, ""},
		{"bad database address", nil, map[string]string{"AGENT_DB_URL": "mysql://db/agent"}, "AGENT_DB_URL: want a postgres://user:password@host:port/database address"},
		{"database password with a bad escape", nil, map[string]string{"AGENT_DB_URL": "postgres://agent:s3cr%zzet@db:5432/agent"},
			"AGENT_DB_URL postgres://agent:xxxxx@db:5432/agent is not a valid address: a % is not followed by two hex digits: write a % in the user name or password as %25"},
		{"database password with a slash", nil, map[string]string{"AGENT_DB_URL": "postgres://agent:s3cr/et@db:5432/agent"},
			"AGENT_DB_URL postgres://agent:xxxxx@db:5432/agent is not a valid address: the address does not parse"},
		{"database address without a database", nil, map[string]string{"AGENT_DB_URL": "postgres://agent:pw@db:5432"},
			"AGENT_DB_URL postgres://agent:xxxxx@db:5432 names no database"},
		{"http ingress without a port", []string{"CHAT_APP_TOKEN"}, map[string]string{"CHAT_SIGNING_SECRET": "s3cr3t", "AGENT_HEALTH_PORT": "0"}, "AGENT_HTTP_PORT: the HTTP ingress (CHAT_SIGNING_SECRET without CHAT_APP_TOKEN) needs a port"},
		{"bad http port", nil, map[string]string{"AGENT_HTTP_PORT": "70000"}, "AGENT_HTTP_PORT: 70000 is not a port"},
		{"http ingress", []string{"CHAT_APP_TOKEN"}, map[string]string{"CHAT_SIGNING_SECRET": "s3cr3t"}, ""},
		{"ok", nil, nil, ""},
		{"oauth only", []string{"LLM_API_KEY"}, map[string]string{"LLM_OAUTH_TOKEN": "sk-ant-oat"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := valid()
			for _, k := range tc.unset {
				delete(env, k)
			}
			for k, v := range tc.set {
				env[k] = v
			}
			err := parse(t, env).ValidateService()
			if err != nil && strings.Contains(err.Error(), "s3cr") {
				t.Fatalf("the error shows the password: %v", err)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestDotenv(t *testing.T) {
	src := "\ufeff# comment\nexport A=1\nB = 'two # not a comment'\nC=\"line\\nnext\"\nD=plain # trailing\r\n\nE=\n"
	got, err := ParseDotenv("x/.env", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two # not a comment", "C": "line\nnext", "D": "plain", "E": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := ParseDotenv("x/.env", []byte("A=1\nnot a line\n")); err == nil || !strings.Contains(err.Error(), "x/.env:2") {
		t.Fatalf("err = %v, want the file and line", err)
	}
}

func TestLoadEnvPrecedence(t *testing.T) {
	root := t.TempDir()
	userHome := filepath.Join(root, "user")
	cwd := filepath.Join(root, "repo")
	agentHome := filepath.Join(root, "data")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(userHome, ".agent", ".env"), "A=user\nB=user\nC=user\nD=user\n")
	write(filepath.Join(cwd, ".env"), "B=repo\nC=repo\nD=repo\nAGENT_HOME="+agentHome+"\n")
	write(filepath.Join(agentHome, ".env"), "C=home\nD=home\n")
	proc := map[string]string{"HOME": userHome, "D": "process"}
	env, err := LoadEnv(envMap(proc), cwd, "")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"A": "user", "B": "repo", "C": "home", "D": "process"} {
		if got := env.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(env.Loaded) != 3 {
		t.Errorf("loaded %v", env.Loaded)
	}
}

func TestSecrets(t *testing.T) {
	c := parse(t, map[string]string{"CHAT_BOT_TOKEN": "xoxb-1", "LLM_OAUTH_TOKEN": "tok",
		"CHAT_SIGNING_SECRET": "sign", "AGENT_DB_URL": "postgres://agent:pg-pass@db:5432/agent"})
	if got := strings.Join(c.Secrets(), ","); got != "xoxb-1,tok,sign,pg-pass" {
		t.Fatalf("secrets %q", got)
	}
	// An address that does not parse still gives its password away to the
	// redactor, as written.
	c = parse(t, map[string]string{"AGENT_DB_URL": "postgres://agent:s3cr%zzet@db:5432/agent"})
	if got := strings.Join(c.Secrets(), ","); got != "s3cr%zzet" {
		t.Fatalf("secrets of a malformed address %q", got)
	}
}

func TestIngressAndDatabase(t *testing.T) {
	c := parse(t, map[string]string{"CHAT_SIGNING_SECRET": "s", "AGENT_HEALTH_PORT": "9090"})
	if !c.HTTPIngress() || c.IngressPort() != 9090 || c.Database() != c.DBPath {
		t.Fatalf("ingress %v port %d database %q", c.HTTPIngress(), c.IngressPort(), c.Database())
	}
	c = parse(t, map[string]string{"CHAT_SIGNING_SECRET": "s", "CHAT_APP_TOKEN": "xapp-1", "AGENT_HTTP_PORT": "9191",
		"AGENT_DB_URL": "postgres://db/agent"})
	if c.HTTPIngress() || c.IngressPort() != 9191 || c.Database() != "postgres://db/agent" {
		t.Fatalf("with an app token: ingress %v port %d database %q", c.HTTPIngress(), c.IngressPort(), c.Database())
	}
}

// The usage a bad flag or --help prints shows each flag's default, which
// is the environment's value: never a credential's.
func TestFlagDefaultsHideCredentials(t *testing.T) {
	env := map[string]string{"CHAT_BOT_TOKEN": "xoxb-s3cr-bot", "CHAT_APP_TOKEN": "xapp-s3cr-app", "CHAT_SIGNING_SECRET": "s3cr-signing",
		"LLM_API_KEY": "sk-ant-s3cr-key", "LLM_OAUTH_TOKEN": "s3cr-oauth", "AGENT_DB_URL": "postgres://agent:s3cr%zz@db/agent"}
	c := &Config{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if err := c.RegisterFlags(fs, envMap(env), "json"); err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.PrintDefaults()
	if strings.Contains(usage.String(), "s3cr") || !strings.Contains(usage.String(), "postgres://agent:xxxxx@db/agent") {
		t.Fatalf("usage:\n%s", usage.String())
	}
	if err := fs.Parse(nil); err != nil || c.BotToken != "xoxb-s3cr-bot" || c.DBURL != env["AGENT_DB_URL"] {
		t.Fatalf("the values themselves changed: %v %q %q", err, c.BotToken, c.DBURL)
	}
}

func TestModelChoices(t *testing.T) {
	for _, tc := range []struct {
		models string
		want   []string
	}{
		{"", []string{"model-a"}},
		{"model-b, model-a,,model-c ", []string{"model-a", "model-b", "model-c"}},
	} {
		c := &Config{Models: tc.models}
		if got := c.ModelChoices("model-a"); !slices.Equal(got, tc.want) {
			t.Errorf("AGENT_MODELS=%q: %v, want %v", tc.models, got, tc.want)
		}
	}
}
