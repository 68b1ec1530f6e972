package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/internal/store"
)

// BenchmarkSimScenarios runs every shipped scenario once per iteration,
// one after another, each checked against its golden file: the
// simulator's work per scenario without its process start (-cpuprofile,
// -benchmem). The bench tool measures `agent sim run` as a whole.
func BenchmarkSimScenarios(b *testing.B) {
	files, err := sim.Discover(filepath.Join("..", "..", "sim", "scenarios"), nil)
	if err != nil {
		b.Fatal(err)
	}
	store.WarmMemory()
	for b.Loop() {
		for _, f := range files {
			if r := runner.File(context.Background(), f, runner.Config{}); r.Err != nil {
				b.Fatalf("%s: %v", f, r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(files)), "µs/scenario")
}
