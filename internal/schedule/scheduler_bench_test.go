//go:build unix

package schedule

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// BenchmarkSchedulerIdle: 10,000 schedules, none due for a day, on the
// real clock. Each op is 10 ms of idle time; reported: the scheduler's
// wakes in it (must be 0: one timer, armed for the earliest), the
// process's CPU per idle second, and the heap the running scheduler
// holds beyond the schedules themselves (no per-schedule state).
func BenchmarkSchedulerIdle(b *testing.B) {
	now := time.Now()
	st := newMemStore()
	for i := range 10000 {
		st.put(Schedule{ID: fmt.Sprintf("s%08d", i), When: "@daily", TZ: "UTC", Prompt: "p", CreatedAt: now,
			NextRunAt: now.Add(24*time.Hour + time.Duration(i)*time.Second)})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := NewScheduler(Deps{Store: st, Runner: &runner{busy: map[string]bool{}, runs: make(chan Run, 1)}, Clock: clock.System})
	if err != nil {
		b.Fatal(err)
	}
	sleeps := make(chan time.Time, 100)
	s.waiting = func(until time.Time) { sleeps <- until }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-sleeps // the first pass is over: asleep until the earliest
	runtime.GC()
	runtime.ReadMemStats(&after)

	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	start := time.Now()
	time.Sleep(time.Duration(b.N) * 10 * time.Millisecond) // one sleep: the benchmark's own wakes would be the noise
	idle := time.Since(start)
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(len(sleeps)), "wakes")
	b.ReportMetric(float64(cpu.Microseconds())/idle.Seconds(), "cpu-µs/s")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "heap-B")
	if len(sleeps) != 0 {
		b.Fatalf("the idle scheduler woke %d times", len(sleeps))
	}
}
