package pipeline_test

import (
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestKinds(t *testing.T) {
	tests := []struct {
		kind  pipeline.Kind
		name  string
		apart bool
	}{
		{pipeline.KindMessage, "message", false},
		{pipeline.KindAction, "action", true},
		{pipeline.KindCommand, "command", true},
		{pipeline.KindReply, "reply", false},
		{pipeline.KindStop, "stop", true},
		{pipeline.KindHome, "home", true},
		{0, "unknown", false},
		{pipeline.Kind(200), "unknown", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.kind.String(); got != tt.name {
				t.Errorf("Kind(%d).String() = %q, want %q", tt.kind, got, tt.name)
			}
			if got := tt.kind.Apart(); got != tt.apart {
				t.Errorf("%s.Apart() = %v, want %v", tt.name, got, tt.apart)
			}
		})
	}
}
