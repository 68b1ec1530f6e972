package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/runner"
)

// simCommand is `agent sim` (the REPL) with its subcommand `run`.
func (c *cli) simCommand() *ffcli.Command {
	return &ffcli.Command{
		Name:        "sim",
		ShortUsage:  "agent sim [--fixture] [--stub|--real] [--soul PATH] | agent sim run [--real] [--verbose] [--update] [--trace] [--soul PATH] [FILES...] | agent sim record [--out FILE] [--update] <channel> <thread_ts>",
		ShortHelp:   "the offline simulator: the production gateway on an in-memory chat",
		FlagSet:     c.simREPLFlags(),
		Subcommands: []*ffcli.Command{c.simRunCommand(), c.simRecordCommand()},
		Exec:        c.simREPL,
	}
}

// scenarioDir is where `sim run` finds scenarios when given no files.
func (c *cli) scenarioDir() string {
	if d := c.getenv("AGENT_SIM_SCENARIOS"); d != "" {
		return d
	}
	return filepath.Join("sim", "scenarios")
}

func (c *cli) simRunCommand() *ffcli.Command {
	fs := flag.NewFlagSet("sim run", flag.ContinueOnError)
	real := fs.Bool("real", false, "use the configured model instead of the stub agent")
	verbose := fs.Bool("verbose", false, "print the transcript of each scenario")
	traces := fs.Bool("trace", false, "print each event's span tree after the scenario's line")
	update := fs.Bool("update", false, "rewrite each scenario's golden transcript (<name>.golden) from this run")
	soulPath := fs.String("soul", "", "run the scenarios against this SOUL.md instead of the sim world")
	cfg, finish := c.configFlags(fs, "text")
	return &ffcli.Command{
		Name:       "run",
		ShortUsage: "agent sim run [--real] [--verbose] [--update] [--trace] [--soul PATH] [FILES...]",
		ShortHelp:  "run scenario transcripts; one line per file and a summary",
		LongHelp: "Each scenario's whole transcript is compared with its golden file (<name>.golden beside the YAML); " +
			"a difference fails the scenario with a unified diff. --update rewrites the golden files. With --real " +
			"(a live model, not deterministic) the golden files are not compared.",
		FlagSet: fs,
		Exec: func(ctx context.Context, args []string) error {
			if err := finish(); err != nil {
				return err
			}
			files, err := sim.Discover(c.scenarioDir(), args)
			if err != nil {
				return err
			}
			rc := runner.Config{LandlockABI: c.landlock, Verbose: *verbose, Traces: *traces}
			if *soulPath != "" {
				if rc.Soul, err = os.ReadFile(*soulPath); err != nil {
					return fmt.Errorf("read SOUL.md: %w", err)
				}
			}
			switch {
			case *real:
				if rc.Model, err = liveModel(cfg); err != nil {
					return err
				}
				rc.Golden = golden.Skip
			case *update:
				rc.Golden = golden.Update
			}
			if !runner.Files(ctx, files, rc, c.stdout) {
				return quietError{code: 1}
			}
			return nil
		},
	}
}

// liveModel is the configured model's client.
func liveModel(cfg *config.Config) (agent.Model, error) {
	if err := cfg.ValidateModel(); err != nil {
		return nil, err
	}
	client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.Model}, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return client, nil
}
