package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestShutdownGrace(t *testing.T) {
	if c := parse(t, nil); c.ShutdownGrace != 30*time.Second {
		t.Errorf("default grace %v, want 30s", c.ShutdownGrace)
	}
	if c := parse(t, map[string]string{"AGENT_SHUTDOWN_GRACE": "45s"}, "--shutdown-grace", "2m"); c.ShutdownGrace != 2*time.Minute {
		t.Errorf("flag over env: grace %v, want 2m", c.ShutdownGrace)
	}
	c := &Config{}
	err := c.RegisterFlags(flag.NewFlagSet("t", flag.ContinueOnError), envMap(map[string]string{"AGENT_SHUTDOWN_GRACE": "30"}), "json")
	if err == nil || err.Error() != `AGENT_SHUTDOWN_GRACE: "30" is not a duration (like 30s or 2m)` {
		t.Errorf("a grace without a unit: %v", err)
	}
	env := valid()
	env["AGENT_SHUTDOWN_GRACE"] = "0s"
	if err := parse(t, env).ValidateService(); err == nil || err.Error() != "AGENT_SHUTDOWN_GRACE: must be above 0, got 0s" {
		t.Errorf("a zero grace: %v", err)
	}
}

// AGENT_METRICS_PORT's default: the health port, but 9090 when the HTTP
// ingress shares the health port (the port the platform reaches shows no
// metrics); never the ingress's port.
func TestMetricsPort(t *testing.T) {
	ingress := func(more map[string]string) map[string]string {
		env := valid()
		delete(env, "CHAT_APP_TOKEN")
		env["CHAT_SIGNING_SECRET"] = "s3cr3t"
		for k, v := range more {
			env[k] = v
		}
		return env
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    int
		wantErr string
	}{
		{"socket mode", valid(), 8080, ""},
		{"socket mode, health port off", map[string]string{"AGENT_HEALTH_PORT": "0"}, 0, ""},
		{"socket mode, set", map[string]string{"AGENT_METRICS_PORT": "9100"}, 9100, ""},
		{"ingress on the health port", ingress(nil), 9090, ""},
		{"ingress on the health port, set", ingress(map[string]string{"AGENT_METRICS_PORT": "9100"}), 9100, ""},
		{"ingress apart", ingress(map[string]string{"AGENT_HTTP_PORT": "8081"}), 8080, ""},
		{"ingress on the health port 9090", ingress(map[string]string{"AGENT_HEALTH_PORT": "9090"}), 9090,
			"AGENT_METRICS_PORT: 9090 is the HTTP ingress's port, which the chat platform reaches: set another port for /metrics"},
		{"set to the ingress's port", ingress(map[string]string{"AGENT_HTTP_PORT": "8081", "AGENT_METRICS_PORT": "8081"}), 8081,
			"AGENT_METRICS_PORT: 8081 is the HTTP ingress's port"},
		{"not a port", map[string]string{"AGENT_METRICS_PORT": "70000"}, 70000, "AGENT_METRICS_PORT: 70000 is not a port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := valid()
			for k, v := range tt.env {
				env[k] = v
			}
			if _, ok := tt.env["CHAT_SIGNING_SECRET"]; ok {
				env = tt.env
			}
			c := parse(t, env)
			if got := c.MetricsListenPort(); got != tt.want {
				t.Errorf("MetricsListenPort = %d, want %d", got, tt.want)
			}
			err := c.ValidateService()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want prefix %q", err, tt.wantErr)
			}
		})
	}
}
