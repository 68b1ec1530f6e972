// Command dashrules writes every PromQL expression of a Grafana dashboard
// (its panels' targets and its query variables) as a Prometheus recording
// rule, so that `promtool check rules` parses them: CI proves the shipped
// dashboard has no expression Prometheus would refuse, without the
// Prometheus Go module.
//
//	go run ./deploy/observability/dashrules dashboard.json >rules.json
//
// Grafana's variables are replaced by values Prometheus accepts
// ($__rate_interval by 5m, $job by .*); label_values(selector, label)
// becomes its selector. The output is JSON, which promtool reads as YAML.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dashrules:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: dashrules DASHBOARD.json")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	exprs := map[string]string{} // rule name → expression
	walk(dash, "dashboard", exprs)
	if len(exprs) == 0 {
		return fmt.Errorf("%s: no expressions", args[0])
	}
	names := make([]string, 0, len(exprs))
	for n := range exprs {
		names = append(names, n)
	}
	sort.Strings(names)
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	rules := make([]rule, 0, len(names))
	for _, n := range names {
		rules = append(rules, rule{Record: n, Expr: exprs[n]})
	}
	doc := map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// walk collects the expressions under v: a target's "expr", a query
// variable's "query" (a string, or an object with one). where names the
// place, and becomes the rule's name.
func walk(v any, where string, exprs map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		here := where
		if id, ok := v["id"].(float64); ok {
			here = fmt.Sprintf("%s:panel_%d", where, int(id))
		}
		if name, ok := v["name"].(string); ok && v["type"] == "query" {
			here = where + ":var_" + name
			if q := variableQuery(v["query"]); q != "" {
				exprs[here] = substitute(q)
			}
		}
		if e, ok := v["expr"].(string); ok && strings.TrimSpace(e) != "" {
			ref, _ := v["refId"].(string)
			exprs[here+"_"+strings.ToLower(ref)] = substitute(e)
		}
		for k, c := range v {
			if k != "query" {
				walk(c, here, exprs)
			}
		}
	case []any:
		for _, c := range v {
			walk(c, where, exprs)
		}
	}
}

// variableQuery is the PromQL of a query variable: label_values(sel,
// label) gives sel; label_values(label) and the other functions of
// Grafana's Prometheus variables give nothing to check.
func variableQuery(q any) string {
	if m, ok := q.(map[string]any); ok {
		q = m["query"]
	}
	s, _ := q.(string)
	if m := labelValues.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	if strings.HasPrefix(s, "query_result(") {
		return strings.TrimSuffix(strings.TrimPrefix(s, "query_result("), ")")
	}
	return ""
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)

// substitute replaces Grafana's variables by values Prometheus parses:
// durations for the interval ones, a match-all regexp for the others.
func substitute(e string) string {
	return variable.ReplaceAllStringFunc(e, func(v string) string {
		name := strings.Trim(v, "${}")
		name, _, _ = strings.Cut(name, ":")
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		case "__interval_ms", "__range_ms":
			return "300000"
		case "__range_s":
			return "300"
		}
		return ".*"
	})
}

var variable = regexp.MustCompile(`\$\{[A-Za-z0-9_:]+\}|\$[A-Za-z0-9_]+`)
