package main

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/pkg/gateway"
)

// startCommand is `agent start` (JSON logs) and `agent dev` (text logs).
func (c *cli) startCommand(name string) *ffcli.Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	format, help := "json", "run the service"
	if name == "dev" {
		format, help = "text", "run the service for development (text logs)"
	}
	cfg, finish := c.configFlags(fs, format)
	return &ffcli.Command{
		Name:       name,
		ShortUsage: "agent " + name + " [flags]",
		ShortHelp:  help,
		LongHelp:   "Settings come from flags, the environment and .env files (~/.agent/.env, ./.env, $AGENT_HOME/.env; later files win, the environment wins over files, flags win over everything).",
		FlagSet:    fs,
		Exec: func(ctx context.Context, _ []string) error {
			if err := finish(); err != nil {
				return err
			}
			if err := cfg.ValidateService(); err != nil {
				return err
			}
			slackPlatform := func(log *slog.Logger) (gateway.Transport, chatAPI) {
				httpClient := &http.Client{Timeout: 60 * time.Second}
				client := gateway.NewSlackClient(cfg.BotToken, cfg.AppToken, cfg.ChatAPIURL, httpClient)
				return gateway.NewSocketMode(client, log), gateway.NewSlackChat(client, cfg.BotToken, log)
			}
			svc, err := newService(ctx, cfg, serviceDeps{stderr: c.stderr, getenv: c.getenv, platform: slackPlatform})
			if err != nil {
				return err
			}
			return svc.run(ctx)
		},
	}
}
