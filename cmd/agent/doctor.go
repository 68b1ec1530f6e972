package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway/slackio"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// checkTimeout bounds each network check of the startup diagnosis.
const checkTimeout = 15 * time.Second

// finding is the outcome of one startup check: a line that names the
// variable concerned and, when something is wrong, how to fix it.
type finding struct {
	ok      bool
	warning bool // not checked: the service may still run (a provider unreachable)
	// degraded: wrong, but the service can run without it (a missing
	// scope disables a feature, not the bot): `start` warns, `doctor` fails.
	degraded bool
	// open: an open door the operator may mean (DMs open to everyone):
	// `doctor` says it (WARN) and passes.
	open bool
	text string
}

// diagnose checks what the service was given, before it connects: the
// chat tokens' shapes, the bot token and its scopes (auth.test and its
// X-OAuth-Scopes), the app token and socket mode (apps.connections.open),
// the model credential (the provider's models list), and whether the
// database can be written. A check that cannot run because an earlier one
// failed is left out.
func diagnose(ctx context.Context, cfg *config.Config) []finding {
	var out []finding
	add := func(ok bool, format string, args ...any) {
		out = append(out, finding{ok: ok, text: fmt.Sprintf(format, args...)})
	}
	// A bad AGENT_DB_URL is checked last and said by diagnoseDB: the
	// other checks still run.
	if err := cfg.ValidateService(); err != nil && !errors.Is(err, config.ErrDBURL) {
		add(false, "%v", err)
		if cfg.BotToken == "" || (cfg.AppToken == "" && !cfg.HTTPIngress()) || cfg.ValidateTokens() != nil {
			return append(out, diagnoseDB(cfg))
		}
	}
	out = append(out, diagnoseChat(ctx, cfg)...)
	if err := cfg.ValidateModel(); err == nil || errors.Is(err, config.ErrDBURL) {
		out = append(out, diagnoseModel(ctx, cfg))
	}
	return append(out, diagnoseDB(cfg))
}

// diagnoseChat asks the platform about both tokens.
func diagnoseChat(ctx context.Context, cfg *config.Config) []finding {
	client := slackio.NewChecker(cfg.BotToken, cfg.AppToken, cfg.ChatAPIURL, &http.Client{Timeout: checkTimeout})
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var out []finding
	bot, err := client.Bot(ctx)
	switch {
	case err != nil && !slackio.IsPlatformAnswer(err):
		out = append(out, finding{warning: true, text: "CHAT_BOT_TOKEN not checked: the chat platform did not answer (" + err.Error() + "); check CHAT_API_URL and the network"})
	case err != nil:
		out = append(out, finding{text: "CHAT_BOT_TOKEN is not accepted by the platform (auth.test: " + slackio.ErrorCode(err) +
			"): copy the Bot User OAuth Token (xoxb-…) of OAuth & Permissions again, or reinstall the app"})
	default:
		if missing := missingScopes(bot.Scopes); bot.ScopesKnown && len(missing) > 0 {
			out = append(out, finding{degraded: true, text: fmt.Sprintf("CHAT_BOT_TOKEN lacks the scopes %s: add them to the app (`agent manifest` prints its manifest) and reinstall it to the workspace",
				strings.Join(missing, ", "))})
		} else {
			out = append(out, finding{ok: true, text: fmt.Sprintf("CHAT_BOT_TOKEN: bot %s in workspace %s", bot.UserID, bot.TeamID)})
		}
		if err := client.HomeTab(ctx, bot.UserID); err != nil && slackio.ErrorCode(err) == "not_enabled" {
			out = append(out, finding{degraded: true, text: "the Home tab is off: turn it on in the app's settings (App Home → Home Tab; `agent manifest` has features.app_home.home_tab_enabled)"})
		}
	}
	if cfg.HTTPIngress() {
		// Nothing to ask: the platform signs what it sends with the secret.
		return append(out, finding{ok: true, text: fmt.Sprintf("CHAT_SIGNING_SECRET: HTTP ingress at %s, %s and %s on port %d (socket mode off)",
			slackio.PathEvents, slackio.PathInteractive, slackio.PathCommands, cfg.IngressPort())})
	}
	if err := client.SocketMode(ctx); err != nil {
		code := slackio.ErrorCode(err)
		switch {
		case !slackio.IsPlatformAnswer(err):
			out = append(out, finding{warning: true, text: "CHAT_APP_TOKEN not checked: the chat platform did not answer (" + err.Error() + ")"})
			return out
		}
		switch code {
		case "missing_scope":
			out = append(out, finding{text: "CHAT_APP_TOKEN lacks the connections:write scope: create an app-level token with it (Basic Information → App-Level Tokens)"})
		case "invalid_auth", "not_authed", "token_revoked", "account_inactive", "not_allowed_token_type":
			out = append(out, finding{text: "CHAT_APP_TOKEN is not accepted by the platform (apps.connections.open: " + code +
				"): copy the app-level token (xapp-…) of Basic Information → App-Level Tokens again"})
		default:
			out = append(out, finding{text: "CHAT_APP_TOKEN cannot open a socket (apps.connections.open: " + code +
				"): turn Socket Mode on in the app's settings, and give the app-level token connections:write"})
		}
	} else {
		out = append(out, finding{ok: true, text: "CHAT_APP_TOKEN: socket mode on"})
	}
	return out
}

// missingScopes are the manifest's bot scopes that granted (the
// comma-separated X-OAuth-Scopes) lacks, in the manifest's order.
func missingScopes(granted string) []string {
	have := map[string]bool{}
	for s := range strings.SplitSeq(granted, ",") {
		have[strings.TrimSpace(s)] = true
	}
	var missing []string
	for _, s := range botScopes {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	return missing
}

// diagnoseModel asks the provider whether it takes the credential.
func diagnoseModel(ctx context.Context, cfg *config.Config) finding {
	name := "LLM_API_KEY"
	if cfg.OAuthToken != "" {
		name = "LLM_OAUTH_TOKEN"
	}
	client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.Model,
		HTTPClient: &http.Client{Timeout: checkTimeout}}, nil, nil, nil)
	if err != nil {
		return finding{text: fmt.Sprintf("%s: %v", name, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	err = client.CheckAuth(ctx)
	var le *llm.Error
	switch {
	case err == nil:
		return finding{ok: true, text: name + ": accepted by the model provider"}
	case errors.Is(err, llm.ErrAuth) && errors.As(err, &le):
		return finding{text: fmt.Sprintf("%s is refused by the model provider (%d %s): set a valid key", name, le.Status, le.Type)}
	case errors.Is(err, llm.ErrUnavailable):
		return finding{warning: true, text: fmt.Sprintf("%s not checked: the model provider did not answer (%v)", name, err)}
	}
	return finding{warning: true, text: fmt.Sprintf("%s not checked: %v", name, err)}
}

// diagnoseDB checks that the database (or the folder it will be made in)
// can be written.
func diagnoseDB(cfg *config.Config) finding {
	if cfg.DBURL != "" {
		if err := cfg.ValidateDatabase(); err != nil {
			return finding{text: err.Error()}
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		name := store.Redact(cfg.DBURL)
		if err := store.Reachable(ctx, cfg.DBURL); err != nil {
			return finding{text: fmt.Sprintf("AGENT_DB_URL %s does not answer (%v): check the address, the password and the network", name, err)}
		}
		return finding{ok: true, text: "AGENT_DB_URL " + name + ": Postgres answers"}
	}
	path := cfg.DBPath
	if _, err := os.Stat(path); err == nil {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return finding{text: fmt.Sprintf("AGENT_DB_PATH %s is not writable (%v): fix its owner or mode", path, unwrapPath(err))}
		}
		f.Close()
		return finding{ok: true, text: "AGENT_DB_PATH " + path + ": writable"}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return finding{text: fmt.Sprintf("AGENT_DB_PATH %s: its folder cannot be made (%v)", path, unwrapPath(err))}
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return finding{text: fmt.Sprintf("AGENT_DB_PATH %s: its folder %s is not writable (%v): fix its owner or mode", path, dir, unwrapPath(err))}
	}
	f.Close()
	os.Remove(f.Name())
	return finding{ok: true, text: "AGENT_DB_PATH " + path + ": writable (not created yet)"}
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// preflight runs the diagnosis before the service connects: every finding
// that stops it is an error line (one per finding); a check that could not
// be made is logged as a warning and the start goes on (the connection
// itself will tell).
func preflight(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	var failed []string
	for _, f := range diagnose(ctx, cfg) {
		switch {
		case f.ok:
		case f.warning || f.degraded:
			log.WarnContext(ctx, "startup check: "+f.text)
		default:
			failed = append(failed, f.text)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return errors.New(strings.Join(failed, "\n"))
}

// doctorCommand is `agent doctor`: the startup checks, one line each,
// exit 0 when all pass.
func (c *cli) doctorCommand() *ffcli.Command {
	return c.command(command{
		name:  "doctor",
		usage: "agent doctor [flags]",
		help:  "check the tokens, their scopes, socket mode, the model key and the database; exit 1 on a problem",
		longHelp: "Runs the checks `agent start` runs before it connects, and prints one line per check: " +
			"ok or FAIL, naming the variable and the fix, and WARN for a door SOUL.md leaves open. Asks the chat platform " +
			"(auth.test, apps.connections.open) and the model provider (its models list).",
		run: func(ctx context.Context, inv *invocation, args []string) error {
			return doctor(ctx, inv, c.landlockABI)
		},
	})
}

// doctor runs the checks of inv's configuration on the kernel whose
// Landlock ABI landlock probes.
func doctor(ctx context.Context, inv *invocation, landlock func() int) error {
	// A check that could not be made fails the doctor: it is there to
	// tell.
	findings := append(diagnose(ctx, inv.cfg), diagnoseDoors(inv.cfg, landlock)...)
	findings = append(findings, diagnoseNet(inv.cfg, landlock)...)
	failed := slices.ContainsFunc(findings, func(f finding) bool { return !f.ok && !f.open })
	for _, f := range findings {
		mark := "ok  "
		switch {
		case f.open:
			mark = "WARN"
		case !f.ok:
			mark = "FAIL"
		}
		fmt.Fprintf(inv.stdout, "%s  %s\n", mark, f.text)
	}
	if failed {
		return quietError{code: 1}
	}
	return nil
}

// diagnoseDoors is doctor's account of SOUL.md's open doors: DMs open to
// the whole workspace (said, not failed: it may be meant) and a bypass
// the start would refuse on this kernel, whose Landlock ABI landlock
// probes (failed). Nothing is said of a SOUL.md that is missing or does
// not parse: validate-soul and the start say that.
func diagnoseDoors(cfg *config.Config, landlock func() int) []finding {
	src, err := os.ReadFile(filepath.Join(cfg.Home, "SOUL.md"))
	if err != nil {
		return nil
	}
	p, err := persona.Parse("SOUL.md", src)
	if err != nil {
		return nil
	}
	var out []finding
	if p.DMOpen() {
		out = append(out, finding{open: true, text: "SOUL.md: " + persona.OpenDMs})
	}
	st := sandbox.Status{Mode: sandbox.Mode(cfg.Sandbox)}
	if st.Mode != sandbox.ModeOff {
		st.Landlock = landlock()
	}
	if err := p.CheckBypass(pipeline.Mode(cfg.DefaultMode), st.BypassRefusal()); err != nil {
		out = append(out, finding{text: err.Error()})
	}
	return out
}

// diagnoseNet says what the network of sandboxed commands is, as the
// start would (the kernel probed the same way): `net allowlist`, or the
// fallback to deny where the kernel gives no namespaces (a warning).
func diagnoseNet(cfg *config.Config, landlock func() int) []finding {
	if sandbox.Mode(cfg.Sandbox) == sandbox.ModeOff {
		return nil
	}
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Mode(cfg.Sandbox), Net: sandbox.Net(cfg.SandboxNet), LandlockABI: landlock})
	if err != nil {
		return nil // the start says it, and the bypass check above
	}
	st := sb.Status()
	if st.Landlock == 0 {
		return nil
	}
	return []finding{{ok: st.NetEnforced && !st.NoNamespace, warning: st.NoNamespace || !st.NetEnforced, text: st.String()}}
}
