package main

import (
	"cmp"
	"context"
	"encoding/base32"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/persona"
)

// simCommand is `agent sim` (the REPL) with its subcommand `run`.
func (c *cli) simCommand() *ffcli.Command {
	return &ffcli.Command{
		Name:        "sim",
		ShortUsage:  "agent sim [--fixture] [--stub|--real] [--soul PATH] | agent sim run [--real] [--verbose] [--update] [--trace] [--soul PATH] [FILES...]",
		ShortHelp:   "the offline simulator: the production gateway on an in-memory chat",
		FlagSet:     c.simREPLFlags(),
		Subcommands: []*ffcli.Command{c.simRunCommand()},
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
			rc := runner.Config{Boot: simBoot, LandlockABI: landlockABI, Verbose: *verbose, Traces: *traces}
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

// simBoot builds the production service for the simulator, on its
// platform and with its hooks.
func simBoot(ctx context.Context, cfg *config.Config, d runner.Deps) (runner.Service, error) {
	svc, err := newService(ctx, cfg, serviceDeps{
		scheduleIDs: simIDs("s", "schedule", d.Counts),
		stderr:      d.Log, getenv: d.Getenv, model: d.Model, spans: d.Spans, soul: d.Soul, stores: d.Stores,
		platform:  func(*slog.Logger) (gateway.Transport, chatAPI) { return d.Platform, d.Platform },
		onHandled: d.OnHandled, onDrop: d.OnDrop, onToolCall: d.OnToolCall,
		clock: d.Clock, onScheduleRun: d.OnScheduleRun, onSchedulerIdle: d.OnSchedulerIdle,
		memoryIDs: simIDs("m", "memory", d.Counts),
	})
	if err != nil {
		return nil, err
	}
	return simService{svc}, nil
}

// simIDs numbers a scenario's things of kind in store.NewID's shape
// with prefix (saaaaaaab, saaaaaaac, … for the schedules), counted by
// counts across restarts, so that its golden file holds the same ids at
// every run and its steps can name them.
func simIDs(prefix, kind string, counts *runner.Counts) func() string {
	if counts == nil {
		counts = &runner.Counts{}
	}
	return func() string {
		v := counts.Next(kind)
		b := []byte{byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	}
}

// simService is the service as the simulator runs it.
type simService struct{ *service }

// Run runs the service until ctx is done.
func (s simService) Run(ctx context.Context) error { return s.run(ctx) }

// Persona is the persona the service runs.
func (s simService) Persona() *persona.Persona { return s.persona }

// AddSchedule stores a schedule id made at the simulated clock's time (in
// UTC) and wakes the scheduler, as the schedule commands do.
func (s simService) AddSchedule(ctx context.Context, id string, req schedule.Request) (schedule.Schedule, error) {
	sc, err := schedule.New(req, time.UTC, s.clock.Now())
	if err != nil {
		return sc, err
	}
	sc.ID = id
	if sc, err = s.store.CreateSchedule(ctx, sc, cmp.Or(s.cfg.MaxSchedules, store.DefaultMaxSchedules)); err != nil {
		return sc, err
	}
	s.scheduler.Notify()
	return sc, nil
}

// WakeScheduler makes the scheduler read the due schedules again.
func (s simService) WakeScheduler() { s.scheduler.Notify() }
