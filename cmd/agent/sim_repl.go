package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/sim"
	simchat "github.com/persona-runtime/agent/internal/sim/platform"
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
	// The observer feeds the program; nothing is posted before the first
	// injection, which only a running program makes.
	var prog atomic.Pointer[tea.Program]
	o.observer = func(e simchat.Entry) {
		if p := prog.Load(); p != nil {
			p.Send(entryMsg(e))
		}
	}
	w, err := startSim(ctx, o)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	replCtx, cancel := context.WithCancel(ctx)
	m := newREPLModel(replCtx, w, c.scenarioDir())
	m.note(fmt.Sprintf("%s · %s · /help lists the commands, Esc or Ctrl+C quits", replHome(rc, o), m.agentMode()))
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithInput(c.stdin), tea.WithOutput(c.stdout),
		tea.WithContext(ctx), tea.WithoutSignalHandler())
	prog.Store(p)
	_, runErr := p.Run()
	cancel() // ends the settles still waiting
	closeErr := w.close()
	if runErr != nil && ctx.Err() == nil {
		return fmt.Errorf("sim: %w", runErr)
	}
	return closeErr
}

func replHome(rc *simREPLConfig, o simOptions) string {
	if rc.fixture {
		return "fixture (temporary home)"
	}
	return "home " + o.home
}

// simREPLOptions resolves the mode: shared config (the home's SOUL.md, state
// under <home>/sim, the live model unless --stub) or --fixture (a temporary
// home, the sim world's persona, the stub unless --real).
func (c *cli) simREPLOptions(rc *simREPLConfig) (simOptions, func(), error) {
	var o simOptions
	noop := func() {}
	if rc.stub && rc.real {
		return o, noop, errors.New("sim: use one of --stub and --real")
	}
	if rc.fixture {
		o.soul = sim.DefaultWorld().SoulMD()
		if rc.soul != "" {
			soul, err := os.ReadFile(rc.soul)
			if err != nil {
				return o, noop, fmt.Errorf("sim: read SOUL.md: %w", err)
			}
			o.soul = soul
		}
	} else {
		if rc.soul != "" {
			fmt.Fprintln(c.stderr, "sim: --soul is honoured only with --fixture (and by sim run); using the home's SOUL.md")
		}
		soul, err := os.ReadFile(filepath.Join(rc.cfg.Home, "SOUL.md"))
		if err != nil {
			return o, noop, fmt.Errorf("sim: read SOUL.md: %w (--fixture runs the sample persona)", err)
		}
		o.soul, o.cfg, o.home = soul, rc.cfg, filepath.Join(rc.cfg.Home, "sim")
	}
	if rc.real || (!rc.fixture && !rc.stub) {
		if err := rc.cfg.ValidateModel(); err != nil {
			return o, noop, fmt.Errorf("sim: %w (--stub runs the stub agent)", err)
		}
		client, err := llm.New(llm.Config{BaseURL: rc.cfg.BaseURL, APIKey: rc.cfg.APIKey, OAuthToken: rc.cfg.OAuthToken, Model: rc.cfg.Model}, nil, nil, nil)
		if err != nil {
			return o, noop, fmt.Errorf("sim: %w", err)
		}
		o.model = client
	} else if !rc.fixture {
		if err := rc.cfg.ValidateSettings(); err != nil {
			return o, noop, fmt.Errorf("sim: %w", err)
		}
	}
	if o.home == "" {
		return o, noop, nil // the fixture's logs go nowhere: its home is removed at exit
	}
	// The screen belongs to the REPL: the service logs to a file.
	if err := os.MkdirAll(o.home, 0o700); err != nil {
		return o, noop, fmt.Errorf("sim: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(o.home, "sim.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return o, noop, fmt.Errorf("sim: %w", err)
	}
	o.log = f
	return o, func() { f.Close() }, nil
}

// The REPL's messages: a transcript entry, an injected message, a settled
// send or click, a played scenario step.
type (
	entryMsg    simchat.Entry
	injectedMsg struct {
		root        bool
		channel, ts string
		ids         []string
		before      int // unresolved cards before the send
		err         error
	}
	settledMsg struct {
		ids []string
		err error
	}
	stepMsg struct {
		play *scenarioPlay
		i    int
		err  error
	}
)
