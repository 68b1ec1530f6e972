package pipeline_test

import (
	"context"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A Progress runs each of its callbacks once, at the first call that
// reports it; AnsweringRecorded stands for the first Answering; a nil
// Progress (an event no inbox keeps) ignores every call.
func TestProgress(t *testing.T) {
	var answering, answered int
	p := pipeline.NewProgress(func() { answering++ }, func() { answered++ })
	ctx := pipeline.NewContextWithProgress(context.Background(), p)
	if pipeline.ProgressFromContext(ctx) != p {
		t.Fatal("the context does not carry the Progress")
	}
	if reached, done := p.State(); reached || done || p.IsAnswering() {
		t.Fatal("a new Progress reports progress")
	}
	p.Reach()
	p.Answering()
	p.Answering()
	p.Answer()
	p.Answer()
	if reached, done := p.State(); !reached || !done || !p.IsAnswering() || answering != 1 || answered != 1 {
		t.Errorf("reached %v, answered %v, answering %v; callbacks %d and %d, want once each", reached, done, p.IsAnswering(), answering, answered)
	}

	recorded := pipeline.NewProgress(func() { t.Error("onAnswering ran after AnsweringRecorded") }, nil)
	recorded.AnsweringRecorded()
	recorded.Answering()
	recorded.Answer()

	var none *pipeline.Progress
	none.Reach()
	none.Answering()
	none.AnsweringRecorded()
	none.Answer()
	if reached, done := none.State(); reached || done || none.IsAnswering() {
		t.Error("a nil Progress reports progress")
	}
	if pipeline.ProgressFromContext(context.Background()) != nil {
		t.Error("a Progress from an empty context")
	}
}
