package runner

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/metrics"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const twoPersonas = "../../../sim/scenarios/peers-two-personas.yaml"

// Two production services, one per persona, on one platform: the release
// persona hands over to on-call, they mention each other until on-call's
// bound drops the release persona's fourth peer mention; after a person
// writes, on-call is heard again and its silent turn posts nothing.
func TestTeamTwoPersonasInOneThread(t *testing.T) {
	sc, err := Load(twoPersonas)
	if err != nil {
		t.Fatal(err)
	}
	var boots atomic.Int32
	boot := func(ctx context.Context, cfg *config.Config, d service.Deps) (Service, error) {
		boots.Add(1)
		return bootService(ctx, cfg, d)
	}
	ctx := context.Background()
	s, err := Start(ctx, Options{Boot: boot, Soul: sim.DefaultWorld().Merge(sc.Soul).SoulMD(), Behaviour: sc.AgentBehavior,
		Recorded: sc.Model, Personas: teamOptions(sc)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := boots.Load(); n != 2 {
		t.Fatalf("%d services booted, want 2 (one per persona)", n)
	}
	p := NewPlayer(s, sc)
	for i, st := range sc.Steps {
		if err := p.Play(ctx, st); err != nil {
			t.Fatalf("step %d (%s): %v\n%s", i+1, st.Kind, err, s.transcript(sc))
		}
	}
	if err := s.Settle(ctx, Injected{}); err != nil {
		t.Fatal(err)
	}
	if note, err := golden.Compare(twoPersonas, s.transcript(sc), golden.Check); err != nil || note != "" {
		t.Fatalf("golden: %v %s", err, note)
	}
	posts := map[string]int{}
	for _, m := range s.Platform().Messages() {
		if m.Op == platform.OpPost {
			posts[m.UserID]++
		}
	}
	// Simbot: the person's turn, its three peer turns, the person's again;
	// Oncall: three peer turns, then a silent one.
	if posts[bot.UserID] != 5 || posts["U0ONC"] != 3 {
		t.Fatalf("posts = %v, want 5 of the release persona's and 3 of on-call's", posts)
	}
	onc := s.member("Oncall")
	// Three turns of a reply and its end (two calls each), and the silent
	// turn's one call: the silent turn ran and was not sent back.
	if n := onc.model.Calls(); n != 7 {
		t.Fatalf("on-call's model answered %d calls, want 7", n)
	}
	if n := s.Scripted().Calls(); n != 10 {
		t.Fatalf("the release persona's model answered %d calls, want 10", n)
	}
}

// A scenario without personas boots one service.
func TestTeamOnlyWithPersonas(t *testing.T) {
	sc, err := sim.ParseScenario("one.yaml", []byte("steps:\n  - send: {text: hi}\n  - expect_reply: {contains: ack}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var boots atomic.Int32
	c := Config{Boot: func(ctx context.Context, cfg *config.Config, d service.Deps) (Service, error) {
		boots.Add(1)
		return bootService(ctx, cfg, d)
	}}
	if _, err := Scenario(context.Background(), sc, c); err != nil {
		t.Fatal(err)
	}
	if n := boots.Load(); n != 1 {
		t.Fatalf("%d services booted for one persona, want 1", n)
	}
}

// The scenarios' services report to the simulator's one set of metrics,
// which counts their turns: no set is made per service.
func TestScenariosShareMetrics(t *testing.T) {
	sc, err := sim.ParseScenario("one.yaml", []byte("steps:\n  - send: {text: hi}\n  - expect_reply: {contains: ack}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var given []*metrics.Metrics
	c := Config{Boot: func(ctx context.Context, cfg *config.Config, d service.Deps) (Service, error) {
		given = append(given, d.Metrics)
		return bootService(ctx, cfg, d)
	}}
	turns := func() float64 { return testutil.ToFloat64(simMetrics().Turns.WithLabelValues("ok")) }
	before := turns()
	for range 2 {
		if _, err := Scenario(context.Background(), sc, c); err != nil {
			t.Fatal(err)
		}
	}
	if len(given) != 2 || given[0] == nil || given[0] != given[1] || given[0] != simMetrics() {
		t.Fatalf("the services were given metrics %v, want the simulator's %p each", given, simMetrics())
	}
	if got := turns() - before; got < 2 {
		t.Errorf("the shared metrics counted %v turns of two scenarios, want 2 or more", got)
	}
}

// A scenario's service serves no metrics, even with a live model's
// configuration that names a metrics port: the set it reports to is
// every scenario's.
func TestScenarioServesNoMetrics(t *testing.T) {
	shared := &config.Config{HealthPort: 8080, MetricsPort: 9100}
	cfg := (&Sim{}).config(Options{Config: shared}, t.TempDir())
	if p := cfg.MetricsListenPort(); p != 0 || cfg.HealthPort != 0 {
		t.Fatalf("a scenario's service listens for metrics on %d, health on %d; want neither", p, cfg.HealthPort)
	}
	if shared.MetricsPort != 9100 {
		t.Fatalf("the shared configuration was changed: metrics port %d", shared.MetricsPort)
	}
}
