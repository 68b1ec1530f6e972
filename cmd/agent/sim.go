package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/peterbourgon/ff/v3/ffcli"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/internal/telemetry"
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

// simParallel is how many scenarios run at once: each boots its own
// service on its own temporary home and in-memory database. One per core
// (GOMAXPROCS) and one more, to fill a core while a scenario waits: more
// only adds services held in memory at once.
func simParallel() int { return runtime.GOMAXPROCS(0) + 1 }

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
			go store.WarmMemory() // the scenarios' databases start as copies of it
			files, err := sim.Discover(c.scenarioDir(), args)
			if err != nil {
				return err
			}
			var soul []byte
			if *soulPath != "" {
				if soul, err = os.ReadFile(*soulPath); err != nil {
					return fmt.Errorf("read SOUL.md: %w", err)
				}
			}
			var model agent.Model
			if *real {
				if err := cfg.ValidateModel(); err != nil {
					return err
				}
				client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.Model}, nil, nil, nil)
				if err != nil {
					return err
				}
				model = client
			}
			golden := goldenCheck
			switch {
			case *real:
				golden = goldenSkip
			case *update:
				golden = goldenUpdate
			}
			results := make([]simResult, len(files))
			scenarios := make([]*sim.Scenario, len(files))
			for i, f := range files {
				results[i].file = f
				scenarios[i], results[i].err = loadScenario(f)
			}
			order := runOrder(scenarios)
			next := make(chan int, len(order))
			for _, i := range order {
				next <- i
			}
			close(next)
			var wg sync.WaitGroup
			for range min(simParallel(), len(order)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						results[i] = runLoaded(ctx, files[i], scenarios[i], soul, model, *verbose, golden, *traces)
					}
				}()
			}
			wg.Wait()
			passed := 0
			for _, r := range results {
				if r.err == nil {
					passed++
					if r.note != "" {
						fmt.Fprintf(c.stdout, "PASS %s (%s)\n", r.file, r.note)
					} else {
						fmt.Fprintf(c.stdout, "PASS %s\n", r.file)
					}
				} else {
					fmt.Fprintf(c.stdout, "FAIL %s: %v\n", r.file, r.err)
				}
				if *verbose {
					io.WriteString(c.stdout, r.transcript)
				}
				if *traces {
					io.WriteString(c.stdout, r.traces)
				}
			}
			fmt.Fprintf(c.stdout, "%d/%d transcripts passed\n", passed, len(files))
			if passed != len(files) {
				return quietError{code: 1}
			}
			return nil
		},
	}
}

type simResult struct {
	file       string
	err        error
	note       string // "no golden file", "updated <name>.golden", "golden file not compared"
	transcript string
	traces     string // --trace: the span trees, indented
}

// goldenMode is what `sim run` does with the golden transcripts.
type goldenMode int

const (
	goldenCheck  goldenMode = iota // compare; a difference fails
	goldenUpdate                   // rewrite
	goldenSkip                     // a live model: not deterministic
)

// runOrder is the order in which the loaded scenarios start (those that did
// not load, nil, are left out): those whose agent runs a command first,
// then the rest as listed. A command costs a scenario more wall time than
// all its other work — a process started through the sandbox, and as root
// a move into a cgroup of its own, which waits on the kernel for up to 20 ms —
// and most of it is waiting, which the scenarios started after it fill;
// started last, it was the run's tail.
func runOrder(scenarios []*sim.Scenario) []int {
	var first, rest []int
	for i, sc := range scenarios {
		switch {
		case sc == nil:
		case scripted.RunsCommands(sc.AgentBehavior):
			first = append(first, i)
		default:
			rest = append(rest, i)
		}
	}
	return append(first, rest...)
}

// loadScenario reads and parses a scenario file.
func loadScenario(file string) (*sim.Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return sim.ParseScenario(file, data)
}

// runFile loads a scenario and runs it.
func runFile(ctx context.Context, file string, soul []byte, model agent.Model, verbose bool, golden goldenMode, traces bool) simResult {
	sc, err := loadScenario(file)
	if err != nil {
		return simResult{file: file, err: err}
	}
	return runLoaded(ctx, file, sc, soul, model, verbose, golden, traces)
}

// runLoaded runs a loaded scenario and checks its transcript.
func runLoaded(ctx context.Context, file string, sc *sim.Scenario, soul []byte, model agent.Model, verbose bool, golden goldenMode, traces bool) simResult {
	r := simResult{file: file}
	var tr strings.Builder
	var w io.Writer
	if verbose {
		w = &tr
	}
	var spans []sdktrace.SpanProcessor
	var trees strings.Builder
	if traces {
		spans = append(spans, telemetry.NewTreePrinter(&indented{w: &trees, prefix: "    "}))
	}
	got, err := runScenario(ctx, sc, soul, model, w, spans...)
	r.traces = trees.String()
	r.err = err
	if errors.Is(r.err, context.Canceled) {
		r.err = errors.New("interrupted")
	}
	if r.err == nil {
		switch golden {
		case goldenSkip:
			r.note = "golden file not compared: a live model"
		default:
			r.note, r.err = checkGolden(file, got, golden == goldenUpdate)
		}
	}
	r.transcript = tr.String()
	return r
}

// indented writes each line it is given with prefix in front.
type indented struct {
	w      io.Writer
	prefix string
}

func (i *indented) Write(p []byte) (int, error) {
	text := strings.TrimSuffix(string(p), "\n")
	if _, err := io.WriteString(i.w, i.prefix+strings.ReplaceAll(text, "\n", "\n"+i.prefix)+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}
