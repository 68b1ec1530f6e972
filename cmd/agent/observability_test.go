package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/internal/fake"
)

// observabilityDir holds the dashboard and alert rules that ship with the
// runtime (README, "Dashboards and alerts").
var observabilityDir = filepath.Join("..", "..", "deploy", "observability")

// TestObservabilityMetricsExported proves the shipped Grafana dashboard and
// Prometheus rules name only series a running agent exports: the service,
// started as `agent start` starts it against the fakes, answers one DM,
// and every metric name of every expression (histograms by their _bucket,
// _sum or _count series) must be on its /metrics page. A renamed metric,
// a typo, or a vector nobody exports at zero fails here, not on an
// operator's empty panel or an alert that can never fire.
func TestObservabilityMetricsExported(t *testing.T) {
	exprs := observabilityExprs(t)
	used := map[string][]string{} // metric name → where it is used
	for where, e := range exprs {
		for _, name := range promMetricNames(e) {
			used[name] = append(used[name], where)
		}
	}
	// The extraction is not vacuous: these are read by both files.
	for _, name := range []string{"agent_turns_total", "agent_turn_duration_seconds_bucket", "agent_socket_connected",
		"agent_approvals_total", "agent_budget_exhausted_total", "agent_llm_cost_usd_total"} {
		if used[name] == nil {
			t.Fatalf("%s not found in the dashboard or the rules: extraction broken? (%d names)", name, len(used))
		}
	}

	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	h.expectReply("D0MGR", "100.1", "status?")
	_, page := h.getAt(h.metricsPort, "/metrics")
	exported := exportedSeries(page)

	var missing []string
	for name, where := range used {
		if !exported[name] {
			sort.Strings(where)
			missing = append(missing, name+" (in "+strings.Join(slices.Compact(where), ", ")+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("names used in deploy/observability that /metrics does not export:\n  %s", strings.Join(missing, "\n  "))
	}
}

// observabilityExprs returns every PromQL expression of dashboard.json
// (targets, and the selectors of its label_values variables) and
// alerts.yaml, by where it is.
func observabilityExprs(t *testing.T) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	data, err := os.ReadFile(filepath.Join(observabilityDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				exprs["dashboard: "+e] = e
			}
			if d, ok := v["definition"].(string); ok && v["type"] == "query" {
				if m := labelValuesRE.FindStringSubmatch(d); m != nil {
					exprs["dashboard variable "+v["name"].(string)] = m[1]
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(dash)

	data, err = os.ReadFile(filepath.Join(observabilityDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["alerts.yaml "+r.Alert+r.Record] = r.Expr
		}
	}
	return exprs
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)

var (
	// What holds no metric name: strings, label matchers, ranges and
	// subqueries, grouping label lists, Grafana's variables.
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promVars     = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z0-9_]+`)
	// A number (a duration too) or a name; a name followed by "(" is a
	// function or an aggregation.
	promTokens   = regexp.MustCompile(`[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?[a-zA-Z]*|([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"group_left": true, "group_right": true, "by": true, "without": true, "on": true, "ignoring": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true, "atan2": true}
)

// promMetricNames returns the metric names an expression selects.
func promMetricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promVars.ReplaceAllString(e, " ")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var names []string
	for _, m := range promTokens.FindAllStringSubmatch(e, -1) {
		if m[1] == "" || m[2] != "" || promKeywords[m[1]] {
			continue
		}
		names = append(names, m[1])
	}
	return names
}

// exportedSeries is the set of sample names of a /metrics page
// (histograms by their _bucket, _sum and _count).
func exportedSeries(page string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.SplitSeq(page, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		out[name] = true
	}
	return out
}

func TestPromMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`histogram_quantile(0.99, sum by (le) (rate(agent_turn_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))`,
			[]string{"agent_turn_duration_seconds_bucket"}},
		{`sum without (instance, outcome) (increase(agent_approvals_total{outcome="requested"}[2h])) - sum without (outcome) (increase(agent_approvals_total[2h])) >= 5`,
			[]string{"agent_approvals_total", "agent_approvals_total"}},
		{`agent_socket_connected == 0`, []string{"agent_socket_connected"}},
		{`60 * rate(a_total{x="}{ b_total"}[5m] offset 1h) / on (job) group_left (pod) b_info and c`, []string{"a_total", "b_info", "c"}},
		{`max_over_time(up[1h:5m]) > 1e3`, []string{"up"}},
	}
	for _, tc := range tests {
		if got := promMetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("promMetricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// agent_socket_connected is 1 once the service's socket is up, and not
// exported at all with the HTTP ingress: AgentSocketDisconnected fires on
// 0, which must never be a process without a socket.
func TestSocketConnectedMetric(t *testing.T) {
	t.Run("socket mode", func(t *testing.T) {
		h := newHarness(t, testSoul)
		h.start()
		h.waitMetric("agent_socket_connected", 1)
	})
	t.Run("HTTP ingress", func(t *testing.T) {
		h, _ := newIngressHarness(t, testSoul)
		h.start()
		_, page := h.getAt(h.metricsPort, "/metrics")
		if !exportedSeries(page)["agent_turns_total"] {
			t.Fatalf("no agent metrics on /metrics:\n%s", page)
		}
		if exportedSeries(page)["agent_socket_connected"] {
			t.Error("agent_socket_connected exported with the HTTP ingress")
		}
	})
}
