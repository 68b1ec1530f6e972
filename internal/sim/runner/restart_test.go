package runner

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// storedEcho is an echoService with a database: it takes it from Stores
// at boot and gives it back when it stops, as the production service
// does, and says its scheduler sleeps as soon as it runs.
type storedEcho struct {
	echoService
	st *store.Store
}

func (e *storedEcho) Run(ctx context.Context) error {
	e.d.OnSchedulerIdle(time.Time{})
	err := e.echoService.Run(ctx)
	return errors.Join(err, e.d.Stores.Put(context.Background(), e.st))
}

// A restart stops the service and boots it again on the same database,
// counts and platform, the clock moved on by the time down; the
// transcript shows it, and the service answers after it.
func TestRestartKeepsTheDatabase(t *testing.T) {
	var mu sync.Mutex
	var boots []*storedEcho
	boot := func(ctx context.Context, _ *config.Config, d service.Deps) (Service, error) {
		st, err := d.Stores.Get(ctx, store.Options{})
		if err != nil {
			return nil, err
		}
		e := &storedEcho{echoService: echoService{d: d, seen: map[string]bool{}, clicks: make(chan *pipeline.Event, 1)}, st: st}
		mu.Lock()
		boots = append(boots, e)
		mu.Unlock()
		return e, nil
	}
	s, err := Start(t.Context(), Options{Boot: boot, LandlockABI: func() int { return 1 }, Soul: []byte("# Sim\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Send("U0ALICE", "D0SIM", "", "before")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	first := boots[0].d.ScheduleIDs()
	if err := s.Restart(t.Context(), 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(boots) != 2 {
		t.Fatalf("%d boots, want 2", len(boots))
	}
	if boots[1].st != boots[0].st {
		t.Error("the service started again on another database")
	}
	if got, want := boots[1].d.ScheduleIDs(), ids("s", "schedule", &Counts{n: map[string]uint64{"schedule": 1}})(); got != want {
		t.Errorf("the counts started again: %s after %s, want %s", got, first, want)
	}
	if want := ClockStart.Add(2 * time.Hour); !s.Now().Equal(want) {
		t.Errorf("clock %v after the restart, want %v", s.Now(), want)
	}
	in, err = s.Send("U0ALICE", "D0SIM", "", "after")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if !answered(s, "after") {
		t.Errorf("no answer after the restart: %+v", s.Platform().Messages())
	}
	calls := s.tools.list()
	if len(calls) != 1 || !calls[0].Plain || calls[0].After != 2 ||
		calls[0].Line != golden.RestartLine(2*time.Hour, ClockStart.Add(2*time.Hour)) {
		t.Errorf("transcript lines %+v, want the restart after the first answer", calls)
	}
	if err := s.Restart(t.Context(), -time.Second); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("a negative restart: %v", err)
	}
}
