package metrics

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestNewExportsPinnedSeriesAtZero(t *testing.T) {
	m := New()

	var want strings.Builder
	want.WriteString("# HELP agent_sessions_live Agent sessions currently live.\n# TYPE agent_sessions_live gauge\nagent_sessions_live 0\n")
	want.WriteString("# HELP agent_chat_drops_total Chat events dropped at the gateway, by reason.\n# TYPE agent_chat_drops_total counter\n")
	for _, r := range append(append([]string(nil), pipeline.DropReasons...), pipeline.MoreDropReasons...) {
		fmt.Fprintf(&want, "agent_chat_drops_total{reason=%q} 0\n", r)
	}
	m.Models("claude-x")
	want.WriteString("# HELP agent_model_tokens_total Tokens reported by the model provider, by kind and model.\n# TYPE agent_model_tokens_total counter\n")
	for _, k := range TokenKinds {
		fmt.Fprintf(&want, "agent_model_tokens_total{kind=%q,model=\"claude-x\"} 0\n", k)
	}
	err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want.String()),
		"agent_sessions_live", "agent_chat_drops_total", "agent_model_tokens_total")
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewRegistersEveryInstrument(t *testing.T) {
	m := New()
	// Vectors appear only once a child exists: touch one of each.
	m.Events.WithLabelValues("message", "handled").Inc()
	m.StageOutcomes.WithLabelValues("drop", pipeline.OutcomePass).Inc()
	m.StageDuration.WithLabelValues("drop").Observe(0.0002)
	m.Turns.WithLabelValues("ok").Inc()
	m.TurnDuration.Observe(3)
	m.StopGuard.Inc()
	m.ToolCalls.WithLabelValues("Read", "ok").Inc()
	m.ToolDuration.WithLabelValues("Read").Observe(0.01)
	m.ModelRequests.WithLabelValues("ok").Inc()
	m.ModelDuration.Observe(2)
	m.Models("claude-x")
	m.Approvals.WithLabelValues("requested").Inc()

	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]string{}
	for _, f := range families {
		got[f.GetName()] = f.GetType().String()
	}
	want := map[string]string{
		"agent_sessions_live":                   "GAUGE",
		"agent_chat_drops_total":                "COUNTER",
		"agent_events_total":                    "COUNTER",
		"agent_pipeline_stage_total":            "COUNTER",
		"agent_pipeline_stage_duration_seconds": "HISTOGRAM",
		"agent_turns_total":                     "COUNTER",
		"agent_turn_duration_seconds":           "HISTOGRAM",
		"agent_turn_stop_guard_total":           "COUNTER",
		"agent_tool_calls_total":                "COUNTER",
		"agent_tool_duration_seconds":           "HISTOGRAM",
		"agent_model_requests_total":            "COUNTER",
		"agent_model_tokens_total":              "COUNTER",
		"agent_model_request_duration_seconds":  "HISTOGRAM",
		"agent_approvals_total":                 "COUNTER",
		"go_goroutines":                         "GAUGE",
	}
	var missing []string
	for name, typ := range want {
		if got[name] != typ {
			missing = append(missing, fmt.Sprintf("%s (%s, got %q)", name, typ, got[name]))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("missing or mistyped families: %s", strings.Join(missing, ", "))
	}

	problems, err := testutil.GatherAndLint(m.Registry)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestNewIsIndependent(t *testing.T) {
	a, b := New(), New()
	a.SessionsLive.Set(3)
	if got := testutil.ToFloat64(b.SessionsLive); got != 0 {
		t.Errorf("second registry sees %v live sessions, want 0", got)
	}
}

func TestStage(t *testing.T) {
	m := New()
	s := m.Stage()
	if any(s.Outcome("drop", pipeline.OutcomePass)) != any(m.StageOutcomes.WithLabelValues("drop", pipeline.OutcomePass)) ||
		any(s.Duration("drop")) != any(m.StageDuration.WithLabelValues("drop")) {
		t.Error("Stage does not return the stage instruments")
	}
}

func TestDropped(t *testing.T) {
	m := New()
	if any(m.Dropped(pipeline.DropDM)) != any(m.Drops.WithLabelValues(pipeline.DropDM)) {
		t.Error("Dropped does not return the drop counter of the reason")
	}
}

// A service's instruments, made once per simulated scenario.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		New()
	}
}

// The series the shipped dashboard and alerts (deploy/observability) read
// exist from start; agent_socket_connected only once a socket asks for it.
func TestNewExportsOutcomesAtZero(t *testing.T) {
	m := New()
	var want strings.Builder
	want.WriteString("# HELP agent_approvals_total Approval cards, by outcome.\n# TYPE agent_approvals_total counter\n")
	for _, o := range sorted(ApprovalOutcomes) {
		fmt.Fprintf(&want, "agent_approvals_total{outcome=%q} 0\n", o)
	}
	want.WriteString("# HELP agent_model_requests_total Requests to the model provider, by outcome.\n# TYPE agent_model_requests_total counter\n")
	for _, o := range sorted(ModelOutcomes) {
		fmt.Fprintf(&want, "agent_model_requests_total{outcome=%q} 0\n", o)
	}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want.String()),
		"agent_approvals_total", "agent_model_requests_total", "agent_socket_connected"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.Turns); n != len(TurnOutcomes) {
		t.Errorf("agent_turns_total has %d series, want %d", n, len(TurnOutcomes))
	}
	if n := testutil.CollectAndCount(m.DeliveryFailures); n != len(DeliveryErrors) {
		t.Errorf("agent_chat_delivery_failures_total has %d series, want %d", n, len(DeliveryErrors))
	}
	m.SocketGauge().Set(1)
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(
		"# HELP agent_socket_connected 1 while the socket mode connection to the chat platform is open, 0 while it connects or is down (absent with the HTTP ingress).\n"+
			"# TYPE agent_socket_connected gauge\nagent_socket_connected 1\n"), "agent_socket_connected"); err != nil {
		t.Fatal(err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
