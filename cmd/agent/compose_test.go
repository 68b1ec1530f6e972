package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/internal/config"
)

// stopMargin is what a stopping service needs after its grace period
// (AGENT_SHUTDOWN_GRACE): the store's closers (bounded at 5 s by
// service.close) and the HTTP servers' shutdown (5 s, beside them). What
// kills it (compose's stop_grace_period, Kubernetes'
// terminationGracePeriodSeconds) must leave at least that much.
const stopMargin = 10 * time.Second

// graceOf is AGENT_SHUTDOWN_GRACE as set (default: config's).
func graceOf(t *testing.T, where, v string) time.Duration {
	t.Helper()
	if v == "" {
		return config.DefaultShutdownGrace
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: AGENT_SHUTDOWN_GRACE %q: %v", where, v, err)
	}
	return d
}

// The compose file: the agent with the sandbox required, and Jaeger only
// under the tracing profile, the agent's OTLP endpoint settable for it.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image           string            `yaml:"image"`
			StopGracePeriod string            `yaml:"stop_grace_period"`
			Profiles        []string          `yaml:"profiles"`
			Environment     map[string]string `yaml:"environment"`
			Ports           []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	agent, jaeger := c.Services["agent"], c.Services["jaeger"]
	if agent.Environment["AGENT_SANDBOX"] != "required" || len(agent.Profiles) != 0 {
		t.Errorf("agent service: %+v", agent)
	}
	if agent.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"] != "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" {
		t.Errorf("the agent's OTLP endpoint is not wired: %q", agent.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}
	if !slices.Equal(jaeger.Profiles, []string{"tracing"}) || jaeger.Environment["COLLECTOR_OTLP_ENABLED"] != "true" ||
		!slices.Contains(jaeger.Ports, "127.0.0.1:16686:16686") {
		t.Errorf("jaeger service: %+v", jaeger)
	}
	// docker compose stop kills after stop_grace_period (10 s unless
	// set): it must outlast the service's own grace and its close.
	stop, err := time.ParseDuration(agent.StopGracePeriod)
	if err != nil {
		t.Fatalf("agent stop_grace_period %q: %v", agent.StopGracePeriod, err)
	}
	if grace := graceOf(t, "compose.yaml", agent.Environment["AGENT_SHUTDOWN_GRACE"]); stop < grace+stopMargin {
		t.Errorf("stop_grace_period %v leaves less than %v after AGENT_SHUTDOWN_GRACE %v", stop, stopMargin, grace)
	}
}

// Every pod the Kubernetes manifests run is given more time to stop
// (terminationGracePeriodSeconds) than the agent takes (its grace and
// its close), and serves its metrics on a port of their own, the one its
// scrape annotation names.
func TestKubernetesStopsGracefully(t *testing.T) {
	files, err := filepath.Glob("../../deploy/kubernetes/rendered/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("rendered manifests: %v %v", files, err)
	}
	type container struct {
		Name string `yaml:"name"`
		Env  []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
	}
	pods := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Name string `yaml:"name"`
				} `yaml:"metadata"`
				Spec struct {
					Template struct {
						Metadata struct {
							Annotations map[string]string `yaml:"annotations"`
						} `yaml:"metadata"`
						Spec struct {
							TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
							Containers                    []container `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if doc.Kind != "Deployment" && doc.Kind != "StatefulSet" {
				continue
			}
			for _, c := range doc.Spec.Template.Spec.Containers {
				if c.Name != "agent" {
					continue
				}
				pods++
				where := filepath.Base(file) + " " + doc.Kind + " " + doc.Metadata.Name
				env := map[string]string{}
				for _, e := range c.Env {
					env[e.Name] = e.Value
				}
				grace := graceOf(t, where, env["AGENT_SHUTDOWN_GRACE"])
				tgps := 30 // Kubernetes' default
				if p := doc.Spec.Template.Spec.TerminationGracePeriodSeconds; p != nil {
					tgps = *p
				}
				if kill := time.Duration(tgps) * time.Second; kill < grace+stopMargin {
					t.Errorf("%s: terminationGracePeriodSeconds %d leaves less than %v after AGENT_SHUTDOWN_GRACE %v", where, tgps, stopMargin, grace)
				}
				port := env["AGENT_METRICS_PORT"]
				if port == "" || port == env["AGENT_HEALTH_PORT"] || doc.Spec.Template.Metadata.Annotations["prometheus.io/port"] != port {
					t.Errorf("%s: metrics on port %q (health %q), scraped at %q", where, port, env["AGENT_HEALTH_PORT"],
						doc.Spec.Template.Metadata.Annotations["prometheus.io/port"])
				}
			}
		}
	}
	if pods == 0 {
		t.Fatal("no agent pod in the rendered manifests")
	}
}
