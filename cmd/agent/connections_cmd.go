package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/pkg/tools"
)

// connectionsCommand is `agent connections`: who connected which tool
// server with their own account (never a token); `agent connections
// remove <user> <server>` revokes one.
func (c *cli) connectionsCommand() *ffcli.Command {
	return c.command(command{
		name:  "connections",
		usage: "agent connections [--json] | agent connections remove <user> <server>",
		help:  "list who signed in to which tool server (never a token), or revoke one",
		json:  "connection",
		run:   connections,
	})
}

func connections(ctx context.Context, inv *invocation, args []string) error {
	switch {
	case len(args) == 3 && args[0] == "remove":
	case len(args) > 0:
		return &exitError{code: 2, err: errors.New("usage: agent connections [--json] | agent connections remove <user> <server>")}
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	var servers []connect.Server
	if conf, err := tools.LoadMCPConfig(filepath.Join(inv.cfg.Home, "mcp.json"), func(string) string { return "" }); err == nil {
		for _, s := range conf.OAuth() {
			servers = append(servers, connect.Server{Name: s.Name, URL: s.URL})
		}
	}
	// The key opens the tokens to revoke them; listing needs none.
	c, err := connect.New(connect.Options{Servers: servers, Key: inv.cfg.SecretKey, Store: st})
	if errors.Is(err, connect.ErrNoKey) {
		c, err = connect.New(connect.Options{Store: st})
	}
	if err != nil {
		return err
	}
	if len(args) == 3 {
		gone, err := c.Remove(ctx, args[1], args[2])
		if err != nil {
			return err
		}
		if !gone {
			return fmt.Errorf("no connection of %s to %s", args[1], args[2])
		}
		_, err = fmt.Fprintf(inv.stdout, "removed the connection of %s to %s\n", args[1], args[2])
		return err
	}
	list, err := c.List(ctx, "")
	if err != nil {
		return err
	}
	if inv.json {
		return printJSON(inv.stdout, list)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(inv.stdout, "no connections")
		return err
	}
	w := newTable(inv.stdout, "USER\tSERVER\tACCOUNT\tSINCE\tUPDATED")
	for _, r := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.User, r.Server, r.Account, r.Since, r.Updated)
	}
	return w.Flush()
}
