package main

import (
	"os"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// The compose file: the agent with the sandbox required, and Jaeger only
// under the tracing profile, the agent's OTLP endpoint settable for it.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Profiles    []string          `yaml:"profiles"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
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
}
