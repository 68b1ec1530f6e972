package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/store"
)

// command is one subcommand of the binary, over the scaffolding every
// command shares: its configuration (flags over the environment over the
// .env files), the shared flags --json and --since, the database and a
// logger. A command's file says only what is its own: its flags and run.
type command struct {
	name, usage, help, longHelp string
	// logFormat is AGENT_LOG_FORMAT's default; "" means text.
	logFormat string
	// noConfig: the command takes no configuration (version): no
	// configuration flags, no .env file read.
	noConfig bool
	// configExit is the exit status when the configuration does not load;
	// 0 means 1.
	configExit int
	// json, when set, adds --json: one JSON object per json (a word:
	// "approval") instead of a table.
	json string
	// since, when set, adds --since (sinceFlag) with this help.
	since string
	// flags registers the command's own flags.
	flags func(fs *flag.FlagSet)
	// run does the command.
	run func(ctx context.Context, inv *invocation, args []string) error
}

// invocation is what a command runs with.
type invocation struct {
	streams
	cfg *config.Config
	// json is --json.
	json bool
	// since is --since.
	since time.Duration
	// st is the database once openStore opened it; closed after run.
	st *store.Store
}

// defaultSince is --since's default: a week.
const defaultSince = 7 * 24 * time.Hour

// command builds the ffcli command of d.
func (c *cli) command(d command) *ffcli.Command {
	fs := flag.NewFlagSet(d.name, flag.ContinueOnError)
	inv := &invocation{streams: c.streams, since: defaultSince}
	if d.json != "" {
		fs.BoolVar(&inv.json, "json", false, "print one JSON object per "+d.json)
	}
	if d.since != "" {
		fs.Var(sinceFlag{&inv.since}, "since", d.since+" (7d, 36h, …)")
	}
	if d.flags != nil {
		d.flags(fs)
	}
	finish := func() error { return nil }
	if !d.noConfig {
		inv.cfg, finish = c.configFlags(fs, cmp.Or(d.logFormat, "text"))
	}
	return &ffcli.Command{
		Name:       d.name,
		ShortUsage: d.usage,
		ShortHelp:  d.help,
		LongHelp:   d.longHelp,
		FlagSet:    fs,
		Exec: func(ctx context.Context, args []string) error {
			if err := finish(); err != nil {
				if d.configExit != 0 {
					return &exitError{code: d.configExit, err: err}
				}
				return err
			}
			defer inv.closeStore()
			return d.run(ctx, inv, args)
		},
	}
}

// openStore opens the configured database for an operator command; the
// scaffolding closes it when the command ends.
func (inv *invocation) openStore(ctx context.Context) (*store.Store, error) {
	if inv.st != nil {
		return inv.st, nil
	}
	st, err := store.Open(ctx, inv.cfg.Database(), store.Options{})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	inv.st = st
	return st, nil
}

// soulPath is the SOUL.md a --soul flag names, by default the home's.
func (inv *invocation) soulPath(flag string) string {
	if flag != "" {
		return flag
	}
	return filepath.Join(inv.cfg.Home, "SOUL.md")
}

// closeStore closes the database if openStore opened it.
func (inv *invocation) closeStore() {
	if inv.st != nil {
		inv.st.Close()
		inv.st = nil
	}
}

// warnings is a logger of warnings and errors on stderr, for a command
// that runs what logs (validate-soul's model extraction).
func (inv *invocation) warnings() *slog.Logger {
	return slog.New(slog.NewTextHandler(inv.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// cutoff is the start of the window --since asks for.
func (inv *invocation) cutoff() time.Time { return time.Now().Add(-inv.since) }

// sinceFlag is --since: how far back a command looks, a Go duration
// ("36h", "90m") or a number of days ("7d", "1.5d"). Every command's
// --since parses with it.
type sinceFlag struct{ d *time.Duration }

func (f sinceFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f sinceFlag) Set(s string) error {
	d, err := parseSince(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// parseSince reads a duration that may also be given in days ("7d").
func parseSince(s string) (time.Duration, error) { return config.ParseDays(s) }
