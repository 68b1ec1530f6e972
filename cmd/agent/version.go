package main

import (
	"context"
	"fmt"

	"github.com/persona-runtime/agent/internal/service"
	"github.com/peterbourgon/ff/v3/ffcli"
)

// versionCommand is `agent version`. It takes no configuration: it says
// the version whatever the .env files hold.
func (c *cli) versionCommand() *ffcli.Command {
	return c.command(command{
		name:     "version",
		usage:    "agent version",
		help:     "print the version",
		noConfig: true,
		run: func(_ context.Context, inv *invocation, _ []string) error {
			_, err := fmt.Fprintf(inv.stdout, "%s v%s\n", service.Name, service.Version)
			return err
		},
	})
}
