package pipeline_test

import (
	"testing"

	"github.com/persona-runtime/agent/internal/deptest"
)

const thisPackage = "github.com/persona-runtime/agent/pkg/pipeline"

// forbiddenDeps are the packages pipeline must never depend on, with why.
// A path also forbids everything below it.
var forbiddenDeps = map[string]string{
	"github.com/slack-go/slack":              "only the gateway's Slack adapter (slackio) knows the chat platform",
	"github.com/uptrace/bun":                 "storage is behind interfaces",
	"modernc.org/sqlite":                     "storage is behind interfaces",
	"github.com/anthropics/anthropic-sdk-go": "the model client lives in internal/llm",
	"github.com/modelcontextprotocol/go-sdk": "the tool servers live outside the domain package",
	"github.com/prometheus/":                 "stages report through StageMetrics and DropCounter; internal/metrics implements them over Prometheus",
	"github.com/persona-runtime/agent/":      "pipeline is the domain package: the rest of the module imports it, never the reverse",
}

// TestDeps fails if pipeline gains a forbidden dependency, directly or not.
func TestDeps(t *testing.T) {
	deptest.Check(t, thisPackage, forbiddenDeps)
}
