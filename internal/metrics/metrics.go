package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"sync"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Token kinds: the kind label of agent_model_tokens_total, one per usage
// field of the model provider's answer (input_tokens, output_tokens,
// cache_read_input_tokens, cache_creation_input_tokens).
const (
	TokensInput      = "input"
	TokensOutput     = "output"
	TokensCacheRead  = "cache_read"
	TokensCacheWrite = "cache_write"
)

// TokenKinds lists every token kind, each exported at zero from start.
var TokenKinds = []string{TokensInput, TokensOutput, TokensCacheRead, TokensCacheWrite}

// Histogram buckets, in seconds. Pipeline stages range from a map lookup
// (drop, ~100µs) to a whole agent turn (the agent stage, up to the event
// timeout of about a minute); model requests and tool calls from a fraction
// of a second to the minutes a long generation or a build takes.
var (
	stageBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	turnBuckets  = []float64{0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	modelBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
	toolBuckets  = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
)

// Metrics holds the service's instruments and the registry they are
// registered on. Constructors elsewhere take the fields they report to;
// every field is safe for concurrent use.
type Metrics struct {
	// Registry gathers every instrument below plus the Go runtime and
	// process collectors: the Gatherer that /metrics serves.
	Registry prometheus.Gatherer

	// SessionsLive is agent_sessions_live: agent sessions currently live.
	SessionsLive prometheus.Gauge
	// Drops is agent_chat_drops_total{reason}: events dropped at the
	// gateway; every reason of pipeline.DropReasons (and
	// pipeline.MoreDropReasons) starts at zero.
	Drops *prometheus.CounterVec
	// Events is agent_events_total{kind,outcome}: inbound events by kind
	// (message, action, command) and outcome (handled, dropped, error, ...).
	Events *prometheus.CounterVec

	// StageOutcomes is agent_pipeline_stage_total{stage,outcome}.
	StageOutcomes *prometheus.CounterVec
	// StageDuration is agent_pipeline_stage_duration_seconds{stage}.
	StageDuration *prometheus.HistogramVec

	// Turns is agent_turns_total{outcome}: agent turns by outcome (ok,
	// error, aborted, stop_guard, ...).
	Turns *prometheus.CounterVec
	// TurnDuration is agent_turn_duration_seconds.
	TurnDuration prometheus.Histogram
	// StopGuard is agent_turn_stop_guard_total: turns where the model ended
	// without replying and was sent back once.
	StopGuard prometheus.Counter

	// ToolCalls is agent_tool_calls_total{tool,outcome}.
	ToolCalls *prometheus.CounterVec
	// ToolDuration is agent_tool_duration_seconds{tool}.
	ToolDuration *prometheus.HistogramVec

	// ModelRequests is agent_model_requests_total{outcome}.
	ModelRequests *prometheus.CounterVec
	// ModelTokens is agent_model_tokens_total{kind,model}, kind one of
	// TokenKinds, model the one asked.
	ModelTokens *prometheus.CounterVec
	// ModelDuration is agent_model_request_duration_seconds.
	ModelDuration prometheus.Histogram

	// Approvals is agent_approvals_total{outcome}: approval cards by outcome
	// (requested, approved, denied, timed_out).
	Approvals *prometheus.CounterVec

	// SandboxInfo is agent_sandbox_info{mode,landlock_abi,net,pids}, 1 for
	// the confinement Bash and tool servers run under (landlock_abi "0":
	// none; net "deny-unenforced": asked for but the kernel cannot).
	SandboxInfo *prometheus.GaugeVec

	// EgressRequests is agent_egress_requests_total{outcome}: the requests
	// of sandboxed commands through the egress proxy, allowed or refused.
	EgressRequests *prometheus.CounterVec

	// InboxEvents is agent_inbox_events_total{outcome}: the inbox's events by
	// how they ended (answered, failed, dropped) and what the start after
	// a crash did with them (resumed, poisoned: given up after crashing
	// the runtime twice).
	InboxEvents *prometheus.CounterVec
	// DeliveryFailures is agent_chat_delivery_failures_total{error}: posts
	// and edits the platform did not take after the retries, by its error.
	DeliveryFailures *prometheus.CounterVec
	// Feedback is agent_reply_feedback_total{value}: clicks on the feedback
	// buttons of final replies, good or bad.
	Feedback *prometheus.CounterVec
	// ScheduleRunsTotal is agent_schedule_runs_total{outcome}: the due
	// times of schedules, by what came of them (schedule.Outcome…).
	ScheduleRunsTotal *prometheus.CounterVec
	// BudgetExhausted is agent_budget_exhausted_total{budget}: turns
	// refused because a budget of "## Budgets" was reached (thread,
	// channel, person, persona).
	BudgetExhausted *prometheus.CounterVec
	// LLMCost is agent_llm_cost_usd_total{channel_layer,model}: the
	// estimated cost of the model calls of turns, by the trust layer of
	// their channel (not the channel: its cardinality is bounded) and the
	// model, as the provider names it (AGENT_MODELS bounds it).
	LLMCost *prometheus.CounterVec
	// SocketConnected is agent_socket_connected: 1 while the socket mode
	// connection to the platform is open, 0 while it connects or is
	// down. A vector without labels, so that it is exported only by a
	// process that uses a socket (SocketGauge), never with the HTTP
	// ingress, where 0 would raise the alert that watches it.
	SocketConnected *prometheus.GaugeVec
	// AttachmentsSkipped is agent_attachments_skipped_total{reason}:
	// files of messages not saved for a cap (AttachmentSkipReasons).
	AttachmentsSkipped *prometheus.CounterVec
}

// SocketGauge is the SocketConnected gauge, exported from this call on.
func (m *Metrics) SocketGauge() prometheus.Gauge { return m.SocketConnected.WithLabelValues() }

// Outcomes exported at zero from start, so that the shipped dashboard and
// alert rules (deploy/observability) see every series before it first
// moves: rate() of an absent series is no data, not 0.
var (
	// ApprovalOutcomes are agent_approvals_total's outcomes (the store's
	// approval states).
	ApprovalOutcomes = []string{"requested", "approved", "denied", "always", "timed_out", "expired"}
	// ModelOutcomes are agent_model_requests_total's outcomes (internal/llm).
	ModelOutcomes = []string{"ok", "unavailable", "auth", "invalid_request", "context_too_long", "canceled", "error"}
	// TurnOutcomes are the usual outcomes of agent_turns_total (the engine
	// has a few more, exported when they first happen).
	TurnOutcomes = []string{"ok", "error", "aborted", "budget"}
	// DeliveryErrors are the errors of agent_chat_delivery_failures_total
	// that are not one of the platform's codes.
	DeliveryErrors = []string{"rate_limited", "network"}
)

// BudgetNames are the budgets of agent_budget_exhausted_total.
var BudgetNames = []string{"thread", "channel", "person", "persona"}

// AttachmentSkipReasons are the reasons of agent_attachments_skipped_total,
// as tools.Attachments.Skipped gives them: files (past
// AGENT_MAX_ATTACHMENTS), size (past AGENT_MAX_ATTACHMENT_MB), quota (past
// AGENT_ATTACHMENTS_MAX_GB), host (its address is not on the platform's
// file hosts, so it is not fetched with the bot token).
var AttachmentSkipReasons = []string{"files", "size", "quota", "host"}

// New returns the instruments registered on a fresh registry, never the
// global one, together with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		SessionsLive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agent_sessions_live",
			Help: "Agent sessions currently live.",
		}),
		Drops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_chat_drops_total",
			Help: "Chat events dropped at the gateway, by reason.",
		}, []string{"reason"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_events_total",
			Help: "Inbound chat events, by kind and outcome.",
		}, []string{"kind", "outcome"}),
		StageOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_pipeline_stage_total",
			Help: "Events through each pipeline stage, by stage and outcome.",
		}, []string{"stage", "outcome"}),
		StageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agent_pipeline_stage_duration_seconds",
			Help:    "Time spent in each pipeline stage, including the stages after it.",
			Buckets: stageBuckets,
		}, []string{"stage"}),
		Turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_turns_total",
			Help: "Agent turns, by outcome.",
		}, []string{"outcome"}),
		TurnDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agent_turn_duration_seconds",
			Help:    "Duration of agent turns.",
			Buckets: turnBuckets,
		}),
		StopGuard: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agent_turn_stop_guard_total",
			Help: "Turns where the model ended without replying and was sent back once.",
		}),
		ToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_tool_calls_total",
			Help: "Tool calls made by the agent, by tool and outcome.",
		}, []string{"tool", "outcome"}),
		ToolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agent_tool_duration_seconds",
			Help:    "Duration of tool calls, by tool.",
			Buckets: toolBuckets,
		}, []string{"tool"}),
		ModelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_model_requests_total",
			Help: "Requests to the model provider, by outcome.",
		}, []string{"outcome"}),
		ModelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_model_tokens_total",
			Help: "Tokens reported by the model provider, by kind and model.",
		}, []string{"kind", "model"}),
		ModelDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agent_model_request_duration_seconds",
			Help:    "Duration of requests to the model provider.",
			Buckets: modelBuckets,
		}),
		Approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_approvals_total",
			Help: "Approval cards, by outcome.",
		}, []string{"outcome"}),
		SandboxInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_sandbox_info",
			Help: "The sandbox of Bash and tool servers: mode, Landlock ABI enforced (0 for none), network policy and process bound.",
		}, []string{"mode", "landlock_abi", "net", "pids"}),
		EgressRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_egress_requests_total",
			Help: "Requests of sandboxed commands through the egress proxy, by outcome: allowed or refused.",
		}, []string{"outcome"}),
		InboxEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_inbox_events_total",
			Help: "Chat events of the durable inbox, by outcome: answered, failed, dropped, resumed after a crash, poisoned.",
		}, []string{"outcome"}),
		DeliveryFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_chat_delivery_failures_total",
			Help: "Posts and edits the chat platform did not take after retries, by its error.",
		}, []string{"error"}),
		Feedback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_reply_feedback_total",
			Help: "Clicks on the feedback buttons of final replies, by value (good, bad).",
		}, []string{"value"}),
		ScheduleRunsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_schedule_runs_total",
			Help: "Due times of schedules, by outcome: ran, skipped_busy (the previous run still going), skipped_missed (down past the catch-up window), failed.",
		}, []string{"outcome"}),
		BudgetExhausted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_budget_exhausted_total",
			Help: "Turns refused because a budget of SOUL.md was reached, by budget (thread, channel, person, persona).",
		}, []string{"budget"}),
		LLMCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_llm_cost_usd_total",
			Help: "Estimated cost in US dollars of the model calls of turns (price table, AGENT_PRICES), by the channel's trust layer and the model asked.",
		}, []string{"channel_layer", "model"}),
		SocketConnected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_socket_connected",
			Help: "1 while the socket mode connection to the chat platform is open, 0 while it connects or is down (absent with the HTTP ingress).",
		}, nil),
		AttachmentsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_attachments_skipped_total",
			Help: "Files of messages not saved, by the cap they passed: files (AGENT_MAX_ATTACHMENTS), size (AGENT_MAX_ATTACHMENT_MB), quota (AGENT_ATTACHMENTS_MAX_GB).",
		}, []string{"reason"}),
	}
	goc, procc := processCollectors()
	m.Registry = &lazyRegistry{collectors: []prometheus.Collector{
		goc, procc,
		m.SessionsLive, m.Drops, m.Events,
		m.StageOutcomes, m.StageDuration,
		m.Turns, m.TurnDuration, m.StopGuard,
		m.ToolCalls, m.ToolDuration,
		m.ModelRequests, m.ModelTokens, m.ModelDuration,
		m.Approvals, m.SandboxInfo, m.InboxEvents, m.DeliveryFailures, m.Feedback,
		m.ScheduleRunsTotal, m.BudgetExhausted, m.LLMCost, m.SocketConnected,
		m.AttachmentsSkipped,
		m.EgressRequests,
	}}
	for _, o := range []string{"allowed", "refused"} {
		m.EgressRequests.WithLabelValues(o)
	}
	for _, r := range AttachmentSkipReasons {
		m.AttachmentsSkipped.WithLabelValues(r)
	}
	for _, o := range ApprovalOutcomes {
		m.Approvals.WithLabelValues(o)
	}
	for _, o := range ModelOutcomes {
		m.ModelRequests.WithLabelValues(o)
	}
	for _, o := range TurnOutcomes {
		m.Turns.WithLabelValues(o)
	}
	for _, e := range DeliveryErrors {
		m.DeliveryFailures.WithLabelValues(e)
	}
	for _, b := range BudgetNames {
		m.BudgetExhausted.WithLabelValues(b)
	}
	for _, v := range []string{pipeline.FeedbackGood, pipeline.FeedbackBad} {
		m.Feedback.WithLabelValues(v)
	}
	for _, o := range []string{"answered", "failed", "dropped", "resumed", "poisoned"} {
		m.InboxEvents.WithLabelValues(o)
	}
	for _, o := range []string{schedule.OutcomeRan, schedule.OutcomeSkippedBusy, schedule.OutcomeSkippedMissed, schedule.OutcomeFailed} {
		m.ScheduleRunsTotal.WithLabelValues(o)
	}
	for _, r := range pipeline.DropReasons {
		m.Drops.WithLabelValues(r)
	}
	for _, r := range pipeline.MoreDropReasons {
		m.Drops.WithLabelValues(r)
	}
	return m
}

// Models exports at zero the series of each model a thread may ask
// (AGENT_MODELS): its tokens of every kind, its cost in every layer.
func (m *Metrics) Models(models ...string) {
	for _, model := range models {
		for _, k := range TokenKinds {
			m.ModelTokens.WithLabelValues(k, model)
		}
		for _, l := range []pipeline.Layer{pipeline.LayerTrusted, pipeline.LayerAllowed, pipeline.LayerRestricted, pipeline.LayerDM} {
			m.LLMCost.WithLabelValues(string(l), model)
		}
	}
}

// lazyRegistry registers its collectors on a registry of its own the first
// time it is gathered: registering runs each collector's Describe in a
// goroutine of its own, a cost every simulated scenario paid for metrics
// nobody scrapes. Registering cannot fail: every name above is distinct
// and valid, which the tests check by gathering; a failure would be a
// programming error, and panics.
type lazyRegistry struct {
	once       sync.Once
	reg        *prometheus.Registry
	collectors []prometheus.Collector
}

// Gather implements prometheus.Gatherer.
func (l *lazyRegistry) Gather() ([]*dto.MetricFamily, error) {
	l.once.Do(func() {
		l.reg = prometheus.NewRegistry()
		l.reg.MustRegister(l.collectors...)
	})
	return l.reg.Gather()
}

// ScheduleRuns is the ScheduleRunsTotal counter of one outcome: m is the
// scheduler's schedule.Metrics.
func (m *Metrics) ScheduleRuns(outcome string) schedule.Counter {
	return m.ScheduleRunsTotal.WithLabelValues(outcome)
}

var _ schedule.Metrics = (*Metrics)(nil)

// Stage returns the instruments every pipeline stage reports to.
func (m *Metrics) Stage() pipeline.StageMetrics { return stageMetrics{m} }

// stageMetrics is pipeline.StageMetrics over StageOutcomes and
// StageDuration.
type stageMetrics struct{ m *Metrics }

func (s stageMetrics) Outcome(stage, outcome string) pipeline.Counter {
	return s.m.StageOutcomes.WithLabelValues(stage, outcome)
}

func (s stageMetrics) Duration(stage string) pipeline.Observer {
	return s.m.StageDuration.WithLabelValues(stage)
}

// Dropped is the Drops counter of one reason: m is the drop stage's
// pipeline.DropCounter.
func (m *Metrics) Dropped(reason string) pipeline.Counter { return m.Drops.WithLabelValues(reason) }

var _ pipeline.DropCounter = (*Metrics)(nil)

// The Go runtime's and the process's collectors describe the process, not
// a service: made once (the Go collector reads the runtime's metric
// descriptions, a cost the simulator paid per scenario) and registered in
// every registry.
var (
	collectorsOnce sync.Once
	goCollector    prometheus.Collector
	procCollector  prometheus.Collector
)

func processCollectors() (prometheus.Collector, prometheus.Collector) {
	collectorsOnce.Do(func() {
		goCollector = collectors.NewGoCollector()
		procCollector = collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
	})
	return goCollector, procCollector
}
