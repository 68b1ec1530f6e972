package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/repl"
	"github.com/persona-runtime/agent/internal/sim/runner"
)

// simREPLConfig are the flags of `agent sim`.
type simREPLConfig struct {
	fixture, stub, real bool
	soul                string
	cfg                 *config.Config
	finish              func() error
}

func (c *cli) simREPLFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	rc := &simREPLConfig{}
	fs.BoolVar(&rc.fixture, "fixture", false, "an isolated temporary home with the sample persona and the stub agent")
	fs.BoolVar(&rc.stub, "stub", false, "the stub agent instead of the configured model")
	fs.BoolVar(&rc.real, "real", false, "the configured model instead of the stub agent (with --fixture)")
	fs.StringVar(&rc.soul, "soul", "", "with --fixture: this SOUL.md instead of the sample persona")
	rc.cfg, rc.finish = c.configFlags(fs, "text")
	c.simREPLConfig = rc
	return fs
}

// simREPL runs the interactive simulator full screen on the cli's streams.
func (c *cli) simREPL(ctx context.Context, args []string) error {
	rc := c.simREPLConfig
	if rc == nil {
		return errors.New("sim: flags not registered")
	}
	if len(args) > 0 {
		return fmt.Errorf("sim: unexpected argument %q (scenario files go to `agent sim run`)", args[0])
	}
	if err := rc.finish(); err != nil {
		return err
	}
	o, closeLog, err := c.simREPLOptions(rc)
	if err != nil {
		return err
	}
	defer closeLog()
	where := "home " + o.Home
	if rc.fixture {
		where = "fixture (temporary home)"
	}
	return repl.Run(ctx, o, repl.Options{Title: service.Name + " · v" + service.Version, Where: where, ScenarioDir: c.scenarioDir(),
		In: c.stdin, Out: c.stdout})
}

// simREPLOptions resolves the mode: shared config (the home's SOUL.md, state
// under <home>/sim, the live model unless --stub) or --fixture (a temporary
// home, the sim world's persona, the stub unless --real).
func (c *cli) simREPLOptions(rc *simREPLConfig) (runner.Options, func(), error) {
	o := runner.Options{LandlockABI: c.landlock}
	noop := func() {}
	if rc.stub && rc.real {
		return o, noop, errors.New("sim: use one of --stub and --real")
	}
	if rc.fixture {
		o.Soul = sim.DefaultWorld().SoulMD()
		if rc.soul != "" {
			soul, err := os.ReadFile(rc.soul)
			if err != nil {
				return o, noop, fmt.Errorf("sim: read SOUL.md: %w", err)
			}
			o.Soul = soul
		}
	} else {
		if rc.soul != "" {
			fmt.Fprintln(c.stderr, "sim: --soul is honoured only with --fixture (and by sim run); using the home's SOUL.md")
		}
		soul, err := os.ReadFile(filepath.Join(rc.cfg.Home, "SOUL.md"))
		if err != nil {
			return o, noop, fmt.Errorf("sim: read SOUL.md: %w (--fixture runs the sample persona)", err)
		}
		o.Soul, o.Config, o.Home = soul, rc.cfg, filepath.Join(rc.cfg.Home, "sim")
	}
	if rc.real || (!rc.fixture && !rc.stub) {
		model, err := liveModel(rc.cfg)
		if err != nil {
			return o, noop, fmt.Errorf("sim: %w (--stub runs the stub agent)", err)
		}
		o.Model = model
	} else if !rc.fixture {
		if err := rc.cfg.ValidateSettings(); err != nil {
			return o, noop, fmt.Errorf("sim: %w", err)
		}
	}
	if o.Home == "" {
		return o, noop, nil // the fixture's logs go nowhere: its home is removed at exit
	}
	// The screen belongs to the REPL: the service logs to a file.
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return o, noop, fmt.Errorf("sim: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(o.Home, "sim.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return o, noop, fmt.Errorf("sim: %w", err)
	}
	o.Log = f
	return o, func() { f.Close() }, nil
}
