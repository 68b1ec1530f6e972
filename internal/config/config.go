package config

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/secret"
)

// Config is every setting of the service. Each field is an environment
// variable and a flag of the same name (AGENT_IDLE_MINUTES is
// --idle-minutes), but the credentials, which have no flag (CHAT_BOT_TOKEN
// is never --chat-bot-token; AGENT_DB_URL is a flag without a password).
type Config struct {
	BotToken   string // CHAT_BOT_TOKEN
	AppToken   string // CHAT_APP_TOKEN
	ChatAPIURL string // CHAT_API_URL
	// SigningSecret (CHAT_SIGNING_SECRET) with no AppToken selects the
	// HTTP ingress (the Events API over HTTP) instead of socket mode.
	SigningSecret string
	HTTPPort      int    // AGENT_HTTP_PORT: the ingress's port; 0 is the health port
	DBURL         string // AGENT_DB_URL: postgres://… selects Postgres
	// SecretKey (AGENT_SECRET_KEY, base64 of 32 bytes) seals the people's
	// tool-server tokens at rest; PublicURL (AGENT_PUBLIC_URL) is where
	// their browsers reach the HTTP port (the sign-in's redirect).
	SecretKey string
	PublicURL string

	APIKey     string // LLM_API_KEY
	OAuthToken string // LLM_OAUTH_TOKEN
	BaseURL    string // LLM_BASE_URL
	Model      string // AGENT_MODEL
	// Models (AGENT_MODELS) is the comma list of model ids /model may
	// choose for a thread; empty means AGENT_MODEL only.
	Models string

	DefaultMode    string  // AGENT_DEFAULT_MODE
	AutoAllowTools string  // AGENT_AUTO_ALLOW_TOOLS
	IdleMinutes    float64 // AGENT_IDLE_MINUTES
	HealthPort     int     // AGENT_HEALTH_PORT
	Home           string  // AGENT_HOME
	DBPath         string  // AGENT_DB_PATH
	Workspaces     string  // AGENT_WORKSPACES
	SkillsRepo     string  // AGENT_SKILLS_REPO
	LogFormat      string  // AGENT_LOG_FORMAT
	LogLevel       string  // AGENT_LOG_LEVEL
	SoulExtract    string  // AGENT_SOUL_EXTRACT
	SoulModel      string  // AGENT_SOUL_MODEL
	Prices         string  // AGENT_PRICES: YAML price table over the known models' prices
	PackageRunner  string  // AGENT_PACKAGE_RUNNER
	GitAuthor      string  // AGENT_GIT_AUTHOR
	MaxTurns       int     // AGENT_MAX_TURNS
	Sandbox        string  // AGENT_SANDBOX
	SandboxNet     string  // AGENT_SANDBOX_NET
	EgressHosts    string  // AGENT_EGRESS_HOSTS: name=address,… read by the egress proxy before DNS
	Pprof          string  // AGENT_PPROF: "1" serves /debug/pprof/ on the health port
	Stream         string  // AGENT_STREAM: auto or off
	// ShutdownGrace (AGENT_SHUTDOWN_GRACE) is how long a stopping service
	// lets running turns finish.
	ShutdownGrace time.Duration
	// OrderSettle (AGENT_ORDER_SETTLE) is how long, with replicas, a
	// message arriving in an idle thread waits before it looks for older
	// messages of its thread recorded at any replica.
	OrderSettle time.Duration
	// MetricsPort (AGENT_METRICS_PORT) serves /metrics and /debug/pprof/;
	// 0 is the default (MetricsListenPort).
	MetricsPort int

	MaxAttachments  int // AGENT_MAX_ATTACHMENTS: files saved per message
	MaxAttachmentMB int // AGENT_MAX_ATTACHMENT_MB: size cap of each
	// AttachmentsMaxGB (AGENT_ATTACHMENTS_MAX_GB) caps the total size of
	// the attachments of all threads; AttachmentsKeep
	// (AGENT_ATTACHMENTS_KEEP) is how long one is kept.
	AttachmentsMaxGB float64
	AttachmentsKeep  time.Duration

	// ContextMessages (AGENT_CONTEXT_MESSAGES) caps the messages of a
	// thread the bot had not seen that a turn carries (the newest).
	ContextMessages int
	// TZ (AGENT_TZ) is the default time zone of schedules whose creator's
	// profile has none, and where a budget's day ends; "" is UTC.
	TZ string
	// Zone is TZ parsed, the one parse of AGENT_TZ: ValidateSettings sets
	// it; nil (before, or on a Config built by hand) is UTC.
	Zone *time.Location
	// ScheduleCatchUp (AGENT_SCHEDULE_CATCHUP): a run missed while the
	// service was down runs at start when missed by at most this.
	ScheduleCatchUp time.Duration
	MaxSchedules    int // AGENT_MAX_SCHEDULES: schedules per persona
	// PeerTurns (AGENT_PEER_TURNS) is how many turns the messages of peers
	// (## Peers) take in a thread between two messages of people.
	PeerTurns int
}

// Defaults.
const (
	DefaultChatAPIURL     = "https://slack.com/api/"
	DefaultMode           = "ask"
	DefaultAutoAllowTools = "Read,Grep,Glob,LS"
	DefaultIdleMinutes    = 15
	DefaultHealthPort     = 8080
	DefaultPackageRunner  = "npx"
	DefaultMaxTurns       = 8
	DefaultSoulModel      = "claude-haiku-4-5"
	DefaultSandbox        = "auto"
	DefaultSandboxNet     = "allowlist"
	// DefaultMaxAttachments and DefaultMaxAttachmentMB are interfaces.md's.
	DefaultMaxAttachments  = 20
	DefaultMaxAttachmentMB = 20
	// DefaultContextMessages is interfaces.md's; MaxContextMessages keeps
	// one turn's input (and a thread read) within reason.
	DefaultContextMessages = 50
	MaxContextMessages     = 1000
)

// setting binds one variable to its flag.
type setting struct {
	env, flag, usage string
	str              *string
	num              *float64
	integer          *int
	dur              *time.Duration
	days             *time.Duration // a duration that may be given in days ("30d")
	def              string
}

func (c *Config) settings(logFormat string) []setting {
	return []setting{
		{env: "CHAT_BOT_TOKEN", usage: "bot token (xoxb-…) from the chat app's install", str: &c.BotToken},
		{env: "CHAT_APP_TOKEN", usage: "app-level token (xapp-…) with connections:write, for socket mode", str: &c.AppToken},
		{env: "CHAT_API_URL", usage: "base address of the chat Web API", str: &c.ChatAPIURL, def: DefaultChatAPIURL},
		{env: "CHAT_SIGNING_SECRET", usage: "the app's signing secret; without CHAT_APP_TOKEN it selects the HTTP ingress", str: &c.SigningSecret},
		{env: "AGENT_HTTP_PORT", usage: "port of the HTTP ingress's /slack/ routes (default: the health port)", integer: &c.HTTPPort, def: "0"},
		{env: "AGENT_DB_URL", usage: "postgres://… selects Postgres for the state (default: SQLite at AGENT_DB_PATH)", str: &c.DBURL},
		{env: "AGENT_SECRET_KEY", usage: "base64 of 32 bytes: seals each person's tool-server tokens at rest (needed by \"auth\": \"oauth\" servers)", str: &c.SecretKey},
		{env: "AGENT_PUBLIC_URL", usage: "where people's browsers reach the HTTP port (the sign-in's redirect is it + /oauth/callback)", str: &c.PublicURL},
		{env: "LLM_API_KEY", usage: "model provider API key (metered)", str: &c.APIKey},
		{env: "LLM_OAUTH_TOKEN", usage: "model provider subscription OAuth token", str: &c.OAuthToken},
		{env: "LLM_BASE_URL", usage: "Anthropic-compatible gateway address (default: the provider's own)", str: &c.BaseURL},
		{env: "AGENT_MODEL", flag: "model", usage: "model id (required with LLM_BASE_URL)", str: &c.Model},
		{env: "AGENT_MODELS", flag: "models", usage: "comma-separated model ids /model may choose for a thread (default: AGENT_MODEL only)", str: &c.Models},
		{env: "AGENT_DEFAULT_MODE", usage: "permission mode of new threads: ask, accept-edits, bypass, plan, dont-ask", str: &c.DefaultMode, def: DefaultMode},
		{env: "AGENT_AUTO_ALLOW_TOOLS", usage: "comma-separated tools allowed without an approval card", str: &c.AutoAllowTools, def: DefaultAutoAllowTools},
		{env: "AGENT_IDLE_MINUTES", usage: "minutes of idleness before a session closes (decimals allowed)", num: &c.IdleMinutes, def: strconv.Itoa(DefaultIdleMinutes)},
		{env: "AGENT_HEALTH_PORT", usage: "port of /healthz, /readyz and /metrics; 0 disables them", integer: &c.HealthPort, def: strconv.Itoa(DefaultHealthPort)},
		{env: "AGENT_HOME", usage: "runtime state directory (default ~/.agent)", str: &c.Home},
		{env: "AGENT_DB_PATH", usage: "database file (default db.sqlite under the home)", str: &c.DBPath},
		{env: "AGENT_WORKSPACES", usage: "thread workspaces directory (default workspaces under the home)", str: &c.Workspaces},
		{env: "AGENT_SKILLS_REPO", usage: "git target for runtime-authored skills, <host>:<owner>/<repo>", str: &c.SkillsRepo},
		{env: "AGENT_LOG_FORMAT", usage: "log format: json or text", str: &c.LogFormat, def: logFormat},
		{env: "AGENT_LOG_LEVEL", usage: "log level: debug, info, warn, error", str: &c.LogLevel, def: "info"},
		{env: "AGENT_SOUL_EXTRACT", usage: "set to model to let a model fill SOUL.md fields the parser cannot find", str: &c.SoulExtract},
		{env: "AGENT_SOUL_MODEL", usage: "model used by AGENT_SOUL_EXTRACT=model", str: &c.SoulModel, def: DefaultSoulModel},
		{env: "AGENT_PRICES", usage: "YAML file of model prices (USD per million input, output, cache_write, cache_read tokens) over the known models'", str: &c.Prices},
		{env: "AGENT_PACKAGE_RUNNER", usage: "what an npx command in mcp.json is rewritten to", str: &c.PackageRunner, def: DefaultPackageRunner},
		{env: "AGENT_GIT_AUTHOR", usage: "commit identity when git has none (default: <persona name> <agent@localhost>)", str: &c.GitAuthor},
		{env: "AGENT_MAX_TURNS", usage: "agent turns running at once across threads", integer: &c.MaxTurns, def: strconv.Itoa(DefaultMaxTurns)},
		{env: "AGENT_SANDBOX", usage: "confinement of Bash and tool servers: auto, required or off (unsafe)", str: &c.Sandbox, def: DefaultSandbox},
		{env: "AGENT_SANDBOX_NET", usage: "network of sandboxed commands: allowlist (only the hosts of SOUL.md ## Network, through the egress proxy), allow or deny", str: &c.SandboxNet, def: DefaultSandboxNet},
		{env: "AGENT_EGRESS_HOSTS", usage: "name=address pairs (comma list) the egress proxy reads before DNS; the only way to allow a private or loopback address", str: &c.EgressHosts},
		{env: "AGENT_STREAM", usage: "show replies while the model writes them: auto or off", str: &c.Stream, def: "auto"},
		{env: "AGENT_PPROF", usage: "1 serves the Go profiles at /debug/pprof/ on the health port", str: &c.Pprof},
		{env: "AGENT_ORDER_SETTLE", usage: "with replicas, how long a thread's message waits for older ones recorded at another replica", dur: &c.OrderSettle, def: DefaultOrderSettle.String()},
		{env: "AGENT_SHUTDOWN_GRACE", usage: "how long a stopping service lets running turns finish", dur: &c.ShutdownGrace, def: DefaultShutdownGrace.String()},
		{env: "AGENT_METRICS_PORT", usage: "port of /metrics and /debug/pprof/ (default: the health port, 9090 when the HTTP ingress shares it)", integer: &c.MetricsPort, def: "0"},
		{env: "AGENT_MAX_ATTACHMENTS", usage: "files of one message saved in the workspace; the rest are skipped", integer: &c.MaxAttachments, def: strconv.Itoa(DefaultMaxAttachments)},
		{env: "AGENT_MAX_ATTACHMENT_MB", usage: "size cap of each file saved from a message, in MB", integer: &c.MaxAttachmentMB, def: strconv.Itoa(DefaultMaxAttachmentMB)},
		{env: "AGENT_ATTACHMENTS_MAX_GB", usage: "total size of the files saved from messages in all threads, in GB (decimals allowed); past it files are skipped", num: &c.AttachmentsMaxGB, def: strconv.Itoa(DefaultAttachmentsMaxGB)},
		{env: "AGENT_ATTACHMENTS_KEEP", usage: "how long a file saved from a message is kept (like 30d or 12h)", days: &c.AttachmentsKeep, def: FormatDays(DefaultAttachmentsKeep)},
		{env: "AGENT_CONTEXT_MESSAGES", usage: "earlier messages of a thread a turn carries when the bot is called into it (the newest)", integer: &c.ContextMessages, def: strconv.Itoa(DefaultContextMessages)},
		{env: "AGENT_TZ", usage: "default time zone of schedules (IANA name, like Europe/Berlin) when the creator's profile has none (default UTC)", str: &c.TZ},
		{env: "AGENT_SCHEDULE_CATCHUP", usage: "a scheduled run missed while the service was down runs at start when missed by at most this", dur: &c.ScheduleCatchUp, def: schedule.DefaultCatchUp.String()},
		{env: "AGENT_MAX_SCHEDULES", usage: "schedules a persona may have", integer: &c.MaxSchedules, def: strconv.Itoa(schedule.DefaultMax)},
		{env: "AGENT_PEER_TURNS", usage: "turns the messages of peers (## Peers) take in a thread between two messages of people", integer: &c.PeerTurns, def: strconv.Itoa(pipeline.DefaultPeerTurns)},
	}
}

// flagName is the flag of an environment variable: AGENT_IDLE_MINUTES is
// idle-minutes, AGENT_DB_URL db-url.
func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "AGENT_")), "_", "-")
}

// RegisterFlags registers a flag for every setting on fs, with defaults taken
// from env (the layered environment), so that a flag given on the command
// line wins and an unset one keeps the environment's value. logFormat is the
// default log format of the command (json for start, text for dev). It
// returns an error naming the variable when an environment value does not
// parse.
func (c *Config) RegisterFlags(fs *flag.FlagSet, env func(string) string, logFormat string) error {
	var errs []error
	for _, s := range c.settings(logFormat) {
		name := s.flag
		if name == "" {
			name = flagName(s.env)
		}
		val := env(s.env)
		if val == "" {
			val = s.def
		}
		if envOnly(s.env) {
			// A credential is read from the environment alone: a flag
			// would show it in the process list, the shell's history and
			// the profiles' command line (RefuseCredentialFlags).
			*s.str = val
			continue
		}
		usage := s.usage + " (" + s.env + ")"
		switch {
		case s.str != nil:
			fs.StringVar(s.str, name, val, usage)
		case s.num != nil:
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a number", s.env, val))
			}
			fs.Float64Var(s.num, name, f, usage)
		case s.integer != nil:
			n, err := strconv.Atoi(val)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an integer", s.env, val))
			}
			fs.IntVar(s.integer, name, n, usage)
		case s.dur != nil:
			d, err := time.ParseDuration(val)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration (like 30s or 2m)", s.env, val))
			}
			fs.DurationVar(s.dur, name, d, usage)
		case s.days != nil:
			d, err := ParseDays(val)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration (like 30d or 12h)", s.env, val))
			}
			*s.days = d
			fs.Var(daysValue{s.days}, name, usage)
		}
		if s.env == "AGENT_DB_URL" && val != "" {
			// The help and the usage printed on a bad flag show each
			// flag's default, here the environment's value: not its
			// password.
			fs.Lookup(name).DefValue = secret.MaskURL(val)
		}
	}
	return errors.Join(errs...)
}

// secretSettings are the variables that hold credentials. All but
// AGENT_DB_URL are read from the environment only; AGENT_DB_URL is a flag
// too, but not with a password in it.
var secretSettings = map[string]bool{"CHAT_BOT_TOKEN": true, "CHAT_APP_TOKEN": true, "CHAT_SIGNING_SECRET": true,
	"AGENT_DB_URL": true, "LLM_API_KEY": true, "LLM_OAUTH_TOKEN": true, "AGENT_SECRET_KEY": true}

// envOnly reports whether the variable env is a credential that has no
// flag.
func envOnly(env string) bool { return secretSettings[env] && env != "AGENT_DB_URL" }

// RefuseCredentialFlags checks a command line before it is parsed: a
// credential given as a flag (--chat-bot-token, -llm-api-key=…, --db-url
// with a password, in any of the flag package's forms, before a "--") is
// refused with one line naming the variable to set instead. The value is
// never quoted.
func RefuseCredentialFlags(args []string) error {
	flags := map[string]string{}
	for env := range secretSettings {
		flags[flagName(env)] = env
	}
	for i, a := range args {
		if a == "--" {
			return nil
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, val, hasVal := strings.Cut(name, "=")
		env, ok := flags[name]
		if !ok {
			continue
		}
		if env == "AGENT_DB_URL" {
			if !hasVal && i+1 < len(args) {
				val = args[i+1]
			}
			if len(secret.URLPasswords(val)) == 0 {
				continue
			}
		}
		return fmt.Errorf("pass %s in the environment or .env, not as a flag", env)
	}
	return nil
}

// Resolve fills the settings derived from others: the home (from userHome
// when unset), the database path and the workspaces directory.
func (c *Config) Resolve(userHome string) {
	if c.Home == "" {
		c.Home = filepath.Join(userHome, ".agent")
	}
	c.Home = expandTilde(c.Home, userHome)
	if c.DBPath == "" {
		c.DBPath = filepath.Join(c.Home, "db.sqlite")
	}
	c.DBPath = expandTilde(c.DBPath, userHome)
	if c.Workspaces == "" {
		c.Workspaces = filepath.Join(c.Home, "workspaces")
	}
	c.Workspaces = expandTilde(c.Workspaces, userHome)
	if c.ChatAPIURL != "" && !strings.HasSuffix(c.ChatAPIURL, "/") {
		c.ChatAPIURL += "/"
	}
}

func expandTilde(p, userHome string) string {
	if p == "~" {
		return userHome
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(userHome, p[2:])
	}
	return p
}

// ValidateService checks what running the service needs, with the exact
// startup errors of the spec, the first failing check first.
func (c *Config) ValidateService() error {
	switch {
	case c.BotToken == "":
		return errors.New("missing env CHAT_BOT_TOKEN")
	case c.AppToken == "" && c.SigningSecret == "":
		return errors.New("missing env CHAT_APP_TOKEN")
	case c.HTTPIngress() && c.IngressPort() == 0:
		return errors.New("AGENT_HTTP_PORT: the HTTP ingress (CHAT_SIGNING_SECRET without CHAT_APP_TOKEN) needs a port; AGENT_HEALTH_PORT is 0")
	case c.HTTPIngress() && c.MetricsListenPort() == c.IngressPort():
		return fmt.Errorf("AGENT_METRICS_PORT: %d is the HTTP ingress's port, which the chat platform reaches: set another port for /metrics", c.IngressPort())
	}
	if err := c.ValidateTokens(); err != nil {
		return err
	}
	return c.ValidateModel()
}

// ValidateTokens checks the chat tokens' shapes: each says what it is by
// its prefix (xoxb- bot, xapp- app-level, xoxp- user), so a token in the
// wrong variable is named without asking the platform.
func (c *Config) ValidateTokens() error {
	bot, app := c.BotToken, c.AppToken
	switch {
	case strings.HasPrefix(bot, "xapp-") && strings.HasPrefix(app, "xoxb-"):
		return errors.New("CHAT_BOT_TOKEN looks like an app-level token (xapp-…) and CHAT_APP_TOKEN like a bot token (xoxb-…): the two are swapped")
	case strings.HasPrefix(bot, "xapp-"):
		return errors.New("CHAT_BOT_TOKEN looks like an app-level token (xapp-…): set it to the Bot User OAuth Token (xoxb-…) of OAuth & Permissions")
	case strings.HasPrefix(bot, "xoxp-"):
		return errors.New("CHAT_BOT_TOKEN looks like a user token (xoxp-…): set it to the Bot User OAuth Token (xoxb-…) of OAuth & Permissions")
	case strings.HasPrefix(app, "xoxb-") || strings.HasPrefix(app, "xoxp-"):
		return errors.New("CHAT_APP_TOKEN looks like an OAuth token (" + app[:5] + "…): set it to an app-level token (xapp-…) with connections:write, from Basic Information → App-Level Tokens")
	}
	return nil
}

// ValidateModel checks the model provider settings.
func (c *Config) ValidateModel() error {
	switch {
	case c.APIKey == "" && c.OAuthToken == "":
		return errors.New("missing auth: set LLM_API_KEY or LLM_OAUTH_TOKEN")
	case c.APIKey != "" && c.OAuthToken != "":
		return errors.New("conflicting auth: set only one of LLM_API_KEY or LLM_OAUTH_TOKEN")
	case c.BaseURL != "" && c.Model == "":
		return errors.New("missing env AGENT_MODEL (required with LLM_BASE_URL)")
	}
	if err := c.ValidateSettings(); err != nil {
		return err
	}
	// Last: `agent doctor` reports the other checks past this one.
	return c.ValidateDatabase()
}

// ValidateSettings checks the values that every command shares.
func (c *Config) ValidateSettings() error {
	switch c.DefaultMode {
	case "ask", "accept-edits", "bypass", "plan", "dont-ask":
	default:
		return fmt.Errorf("AGENT_DEFAULT_MODE: unknown permission mode %q (want ask, accept-edits, bypass, plan or dont-ask)", c.DefaultMode)
	}
	switch {
	case c.IdleMinutes <= 0:
		return fmt.Errorf("AGENT_IDLE_MINUTES: must be above 0, got %v", c.IdleMinutes)
	case c.HealthPort < 0 || c.HealthPort > 65535:
		return fmt.Errorf("AGENT_HEALTH_PORT: %d is not a port", c.HealthPort)
	case c.HTTPPort < 0 || c.HTTPPort > 65535:
		return fmt.Errorf("AGENT_HTTP_PORT: %d is not a port", c.HTTPPort)
	case c.MaxTurns < 1:
		return fmt.Errorf("AGENT_MAX_TURNS: must be at least 1, got %d", c.MaxTurns)
	case c.SoulExtract != "" && c.SoulExtract != "model":
		return fmt.Errorf("AGENT_SOUL_EXTRACT: unknown value %q (want model or nothing)", c.SoulExtract)
	case c.Sandbox != "auto" && c.Sandbox != "required" && c.Sandbox != "off":
		return fmt.Errorf("AGENT_SANDBOX: unknown value %q (want auto, required or off)", c.Sandbox)
	case c.SandboxNet != "allowlist" && c.SandboxNet != "allow" && c.SandboxNet != "deny":
		return fmt.Errorf("AGENT_SANDBOX_NET: unknown value %q (want allowlist, allow or deny)", c.SandboxNet)
	case c.Stream != "" && c.Stream != "auto" && c.Stream != "off":
		return fmt.Errorf("AGENT_STREAM: unknown value %q (want auto or off)", c.Stream)
	case c.Pprof != "" && c.Pprof != "0" && c.Pprof != "1":
		return fmt.Errorf("AGENT_PPROF: unknown value %q (want 1 or 0)", c.Pprof)
	}
	if err := c.validateShutdownAndMetrics(); err != nil {
		return err
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			return errors.New("AGENT_PUBLIC_URL: want an address like https://agent.example.com")
		}
	}
	if err := c.validateContext(); err != nil {
		return err
	}
	if c.PeerTurns < 1 || c.PeerTurns > pipeline.PeerTurnsPerHour {
		return fmt.Errorf("AGENT_PEER_TURNS: must be between 1 and %d (the turns of a thread in an hour), got %d", pipeline.PeerTurnsPerHour, c.PeerTurns)
	}
	if err := c.validateSchedules(); err != nil {
		return err
	}
	return c.validateAttachments()
}

// validateContext checks AGENT_CONTEXT_MESSAGES.
func (c *Config) validateContext() error {
	if c.ContextMessages < 1 || c.ContextMessages > MaxContextMessages {
		return fmt.Errorf("AGENT_CONTEXT_MESSAGES: must be between 1 and %d, got %d", MaxContextMessages, c.ContextMessages)
	}
	return nil
}

// validateAttachments checks the attachment caps.
func (c *Config) validateAttachments() error {
	switch {
	case c.MaxAttachments < 1:
		return fmt.Errorf("AGENT_MAX_ATTACHMENTS: must be at least 1, got %d", c.MaxAttachments)
	case c.MaxAttachmentMB < 1 || c.MaxAttachmentMB > 1024:
		return fmt.Errorf("AGENT_MAX_ATTACHMENT_MB: must be between 1 and 1024, got %d", c.MaxAttachmentMB)
	}
	return c.validateAttachmentsDisk()
}

// ErrDBURL matches the error of a bad AGENT_DB_URL.
var ErrDBURL = errors.New("bad AGENT_DB_URL")

// dbURLError is a bad AGENT_DB_URL, said with its password masked.
type dbURLError struct{ text string }

func (e *dbURLError) Error() string        { return e.text }
func (e *dbURLError) Is(target error) bool { return target == ErrDBURL }

// ValidateDatabase checks AGENT_DB_URL before anything quotes it: a
// password with a bad "%" escape (or an unescaped "/", "#", …) makes the
// address unparseable, and the URL parser's error quotes it whole. The
// error names the variable and shows the address with its password
// masked; it matches ErrDBURL.
func (c *Config) ValidateDatabase() error {
	if c.DBURL == "" {
		return nil
	}
	masked := secret.MaskURL(c.DBURL)
	if !strings.HasPrefix(c.DBURL, "postgres://") && !strings.HasPrefix(c.DBURL, "postgresql://") {
		return &dbURLError{"AGENT_DB_URL: want a postgres://user:password@host:port/database address"}
	}
	if err := secret.CheckURL(c.DBURL); err != nil {
		return &dbURLError{fmt.Sprintf("AGENT_DB_URL %s is not a valid address: %v", masked, err)}
	}
	if u, _ := url.Parse(c.DBURL); u.Path == "" || u.Path == "/" {
		return &dbURLError{fmt.Sprintf("AGENT_DB_URL %s names no database: want postgres://user:password@host:port/database", masked)}
	}
	return nil
}

// Database is where the state lives: AGENT_DB_URL (Postgres) when set,
// else the SQLite file AGENT_DB_PATH.
func (c *Config) Database() string {
	if c.DBURL != "" {
		return c.DBURL
	}
	return c.DBPath
}

// HTTPIngress reports whether events come over HTTP (the Events API):
// CHAT_SIGNING_SECRET set and CHAT_APP_TOKEN unset. Otherwise socket mode.
func (c *Config) HTTPIngress() bool { return c.SigningSecret != "" && c.AppToken == "" }

// IngressPort is the port of the HTTP ingress: AGENT_HTTP_PORT, or the
// health port when it is unset.
func (c *Config) IngressPort() int {
	if c.HTTPPort != 0 {
		return c.HTTPPort
	}
	return c.HealthPort
}

// IdleTimeout is AGENT_IDLE_MINUTES as a duration.
func (c *Config) IdleTimeout() time.Duration {
	return time.Duration(c.IdleMinutes * float64(time.Minute))
}

// AutoAllowed is AGENT_AUTO_ALLOW_TOOLS as a list.
func (c *Config) AutoAllowed() []string {
	var out []string
	for _, t := range strings.Split(c.AutoAllowTools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// ModelChoices is AGENT_MODELS as a list, the service's model (the one
// AGENT_MODEL names or the provider's default) first and once: a thread
// can always go back to it.
func (c *Config) ModelChoices(service string) []string {
	out := []string{service}
	for _, m := range strings.Split(c.Models, ",") {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Secrets are the credential values that must never appear in logs,
// prompts, replies or tool output.
func (c *Config) Secrets() []string {
	var out []string
	// The database password also when the address does not parse: it is
	// then quoted by errors before anything else sees it.
	for _, s := range append([]string{c.BotToken, c.AppToken, c.APIKey, c.OAuthToken, c.SigningSecret, c.SecretKey}, secret.URLPasswords(c.DBURL)...) {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
