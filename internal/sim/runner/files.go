package runner

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/internal/store"
)

// Files runs the scenario files, several at once, and writes to out one
// line per file in the order given, `PASS <file>` (with a note on its
// golden file) or `FAIL <file>: <why>`, each followed by its transcript
// (Verbose) and span trees (Traces), then the summary line. It reports
// whether every file passed.
func Files(ctx context.Context, files []string, c Config, out io.Writer) bool {
	go store.WarmMemory() // the scenarios' databases start as copies of it
	results := make([]Result, len(files))
	scenarios := make([]*sim.Scenario, len(files))
	each(len(files), func(i int) {
		results[i].File = files[i]
		scenarios[i], results[i].Err = Load(files[i])
	})
	order := runOrder(scenarios)
	each(len(order), func(k int) {
		i := order[k]
		results[i] = runLoaded(ctx, files[i], scenarios[i], c)
	})
	passed := 0
	for _, r := range results {
		switch {
		case r.Err != nil:
			fmt.Fprintf(out, "FAIL %s: %v\n", r.File, r.Err)
		case r.Note != "":
			passed++
			fmt.Fprintf(out, "PASS %s (%s)\n", r.File, r.Note)
		default:
			passed++
			fmt.Fprintf(out, "PASS %s\n", r.File)
		}
		if c.Verbose {
			io.WriteString(out, r.Transcript)
		}
		if c.Traces {
			io.WriteString(out, r.Traces)
		}
	}
	fmt.Fprintf(out, "%d/%d transcripts passed\n", passed, len(files))
	return passed == len(files)
}

// each calls fn(0) … fn(n-1), parallel() calls at a time, taking the
// indexes in order, and returns when all have returned.
func each(n int, fn func(i int)) {
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(parallel(), n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// parallel is how many files are loaded, and how many scenarios run, at
// once: each scenario boots its own service on its own temporary home and
// in-memory database. One per core (GOMAXPROCS). A worker more, to fill
// a core while a scenario waits, was measured (the README's tenth round):
// it cost CPU (one more in-memory database to copy and prepare, three
// services on two cores) and peak memory, and won no wall time.
func parallel() int { return runtime.GOMAXPROCS(0) }

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
