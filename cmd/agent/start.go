package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/telemetry"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/gateway/slackio"
)

// startCommand is `agent start` (JSON logs) and `agent dev` (text logs).
func (c *cli) startCommand(name string) *ffcli.Command {
	format, help := "json", "run the service"
	usage := "agent " + name + " [flags]"
	if name == "dev" {
		format, help = "text", "run the service with file watching: a change to SOUL.md, mcp.json or agent.json restarts it (text logs)"
		usage = "agent dev [--trace] [flags]"
	}
	var traces bool
	return c.command(command{
		name:      name,
		usage:     usage,
		help:      help,
		longHelp:  "Settings come from flags, the environment and .env files (~/.agent/.env, ./.env, $AGENT_HOME/.env; later files win, the environment wins over files, flags win over everything).",
		logFormat: format,
		flags: func(fs *flag.FlagSet) {
			if name == "dev" {
				fs.BoolVar(&traces, "trace", false, "print each event's span tree on stderr (durations, stages, model calls, tools)")
			}
		},
		run: func(ctx context.Context, inv *invocation, _ []string) error {
			cfg := inv.cfg
			if err := cfg.ValidateService(); err != nil {
				return err
			}
			slackPlatform := func(log *slog.Logger) (gateway.Transport, service.ChatAPI) {
				httpClient := &http.Client{Timeout: 60 * time.Second}
				client := slackio.NewClient(cfg.BotToken, cfg.AppToken, cfg.ChatAPIURL, httpClient)
				chat := slackio.NewChat(client, cfg.BotToken, cfg.ChatAPIURL, log)
				if cfg.HTTPIngress() {
					return slackio.NewHTTPIngress(cfg.SigningSecret, log), chat
				}
				return slackio.NewSocketMode(client, log), chat
			}
			deps := service.Deps{Stderr: c.stderr, Getenv: c.getenv, Platform: slackPlatform, LandlockABI: c.landlock,
				Preflight: func(ctx context.Context, log *slog.Logger) error { return preflight(ctx, cfg, log) }}
			if c.serviceDeps != nil {
				c.serviceDeps(&deps)
			}
			if traces {
				deps.Spans = append(deps.Spans, telemetry.NewTreePrinter(c.stderr))
			}
			if name != "dev" {
				svc, err := service.New(ctx, cfg, deps)
				if err != nil {
					return err
				}
				return svc.Run(ctx)
			}
			return runWatching(ctx, cfg.Home, watchInterval, func(ctx context.Context) error {
				svc, err := service.New(ctx, cfg, deps)
				if err != nil {
					return err
				}
				return svc.Run(ctx)
			}, c.stderr)
		},
	})
}

// watchInterval is how often `agent dev` looks at the watched files: a
// stat each, cheap enough to be invisible, quick enough for an edit loop.
const watchInterval = time.Second

// watchedFiles are the files whose change restarts `agent dev`. Skills
// need no restart: they are discovered on every message.
var watchedFiles = []string{"SOUL.md", "mcp.json", "agent.json"}

// runWatching runs serve until ctx is done, restarting it whenever one of
// the watched files under home changes. A service that fails to start (a
// SOUL.md being edited may be invalid for a moment) is reported and retried
// at the next change.
func runWatching(ctx context.Context, home string, every time.Duration, serve func(context.Context) error, stderr io.Writer) error {
	for {
		before := stamp(home)
		runCtx, cancel := context.WithCancel(ctx)
		changed := make(chan struct{})
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
					if stamp(home) != before {
						close(changed)
						cancel()
						return
					}
				}
			}
		}()
		err := serve(runCtx)
		select {
		case <-changed:
			fmt.Fprintln(stderr, "dev: a watched file changed; restarting")
			continue
		default:
		}
		if ctx.Err() != nil {
			cancel()
			return err
		}
		if err != nil {
			fmt.Fprintf(stderr, "dev: %v (waiting for a change to %s)\n", err, strings.Join(watchedFiles, ", "))
			select {
			case <-changed:
				cancel()
				continue
			case <-ctx.Done():
				cancel()
				return err
			}
		}
		cancel()
		return nil
	}
}

// stamp summarises the watched files' sizes and modification times.
func stamp(home string) string {
	var b strings.Builder
	for _, f := range watchedFiles {
		if st, err := os.Stat(filepath.Join(home, f)); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}
