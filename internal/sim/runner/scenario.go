package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/telemetry"
)

// Config configures the runs of scenario files.
type Config struct {
	// Boot builds the service; nil: the production service.
	Boot Boot
	// LandlockABI is the kernel's Landlock ABI; nil asks the kernel.
	LandlockABI func() int
	// Soul replaces the sim world (and the scenarios' soul overrides).
	Soul []byte
	// Model replaces the scripted model (--real).
	Model agent.Model
	// Golden is what a run does with the golden transcripts.
	Golden golden.Mode
	// Verbose keeps each scenario's transcript (Result.Transcript).
	Verbose bool
	// Traces keeps each event's span tree (Result.Traces).
	Traces bool
	// Spans are more span processors, given to every scenario's service.
	Spans []sdktrace.SpanProcessor

	verbose io.Writer // where Scenario writes the transcript (Verbose)
}

// Result is the outcome of one scenario file.
type Result struct {
	File string
	// Err says why the scenario failed; nil when it passed.
	Err error
	// Note says what happened to its golden file ("no golden file",
	// "updated <name>.golden", …); "" when it matched.
	Note string
	// Transcript is the platform's transcript, one entry a line (Verbose).
	Transcript string
	// Traces are the span trees, indented (Traces).
	Traces string
}

// File loads a scenario file, runs it and checks its golden transcript.
func File(ctx context.Context, file string, c Config) Result {
	sc, err := Load(file)
	if err != nil {
		return Result{File: file, Err: err}
	}
	return runLoaded(ctx, file, sc, c)
}

// Load reads and parses a scenario file.
func Load(file string) (*sim.Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return sim.ParseScenario(file, data)
}

// runLoaded runs a loaded scenario and checks its golden transcript.
func runLoaded(ctx context.Context, file string, sc *sim.Scenario, c Config) Result {
	r := Result{File: file}
	var tr, trees strings.Builder
	if c.Verbose {
		c.verbose = &tr
	}
	if c.Traces {
		c.Spans = append(c.Spans[:len(c.Spans):len(c.Spans)], telemetry.NewTreePrinter(&indented{w: &trees, prefix: "    "}))
	}
	got, err := Scenario(ctx, sc, c)
	r.Traces, r.Err = trees.String(), err
	if errors.Is(r.Err, context.Canceled) {
		r.Err = errors.New("interrupted")
	}
	if r.Err == nil {
		r.Note, r.Err = golden.Compare(file, got, c.Golden)
	}
	r.Transcript = tr.String()
	return r
}

// Scenario runs one scenario in a simulation of its own and returns its
// golden transcript, and nil when every step passed or an error saying
// which step failed, what was expected and what was seen.
func Scenario(ctx context.Context, sc *sim.Scenario, c Config) (string, error) {
	soul := c.Soul
	if soul == nil {
		soul = sim.DefaultWorld().Merge(sc.Soul).SoulMD()
	}
	s, err := Start(ctx, Options{Boot: c.Boot, LandlockABI: c.LandlockABI, Soul: soul, Behaviour: sc.AgentBehavior, Recorded: sc.Model,
		Model: c.Model, Spans: c.Spans, AgentView: sc.AgentView, Tasks: sc.Tasks, SignIn: sc.SignIn, ToolServers: sc.ToolServers, Personas: teamOptions(sc)})
	if err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	defer s.Close()
	p := NewPlayer(s, sc)
	for i, st := range sc.Steps {
		if err := p.Play(ctx, st); err != nil {
			s.dump(c.verbose)
			return s.transcript(sc), fmt.Errorf("step %d (%s): %w", i+1, st.Kind, err)
		}
	}
	// Let the last turn end (its final model call comes after its reply),
	// so that the transcript is whole.
	// A turn waiting on a card stays as it is.
	if unresolved(s.chat.Cards()) == 0 {
		if err := s.Settle(ctx, Injected{}); err != nil {
			return s.transcript(sc), err
		}
	}
	s.dump(c.verbose)
	return s.transcript(sc), nil
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
