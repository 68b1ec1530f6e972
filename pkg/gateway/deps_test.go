package gateway_test

import (
	"testing"

	"github.com/persona-runtime/agent/internal/deptest"
)

// forbiddenDeps are the packages the dispatcher must never depend on, with
// why. A path also forbids everything below it.
var forbiddenDeps = map[string]string{
	"github.com/slack-go/slack":              "the dispatcher knows no platform SDK: the Slack adapter is package slackio",
	"github.com/go-chi/chi":                  "the HTTP ingress and its routes are slackio's",
	"github.com/anthropics/anthropic-sdk-go": "the model client lives in internal/llm, behind the agent stage",
	"github.com/modelcontextprotocol/go-sdk": "the tool servers live outside the gateway",
}

// TestDeps fails if the gateway gains a forbidden dependency, directly or
// not (through memory.go too, while the simulated platform lives here).
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/persona-runtime/agent/pkg/gateway", forbiddenDeps)
}
