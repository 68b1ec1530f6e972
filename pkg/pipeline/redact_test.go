package pipeline_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakeRedactor is a pipeline.Redactor scripted by its field.
type fakeRedactor struct {
	RedactFn func(text string) string
}

func (r *fakeRedactor) Redact(text string) string { return r.RedactFn(text) }

var tokenRe = regexp.MustCompile(`xox[bp]-[A-Za-z0-9-]+`)

func tokenRedactor() *fakeRedactor {
	return &fakeRedactor{RedactFn: func(s string) string { return tokenRe.ReplaceAllString(s, "[redacted: chat token]") }}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		ev   *pipeline.Event
		want pipeline.Event // the fields next must see
	}{
		{"message text",
			&pipeline.Event{Kind: pipeline.KindMessage, Text: "my token is xoxb-123-abc ok"},
			pipeline.Event{Text: "my token is [redacted: chat token] ok"}},
		{"command args",
			&pipeline.Event{Kind: pipeline.KindCommand, Text: "", Command: &pipeline.Command{Name: "/ingest", Args: "kb xoxp-9-z"}},
			pipeline.Event{Command: &pipeline.Command{Name: "/ingest", Args: "kb [redacted: chat token]"}}},
		{"file names",
			&pipeline.Event{Kind: pipeline.KindMessage, Text: "see files", Files: []pipeline.File{
				{ID: "F1", Name: "xoxb-1-a.txt"}, {ID: "F2", Name: "plain.txt"}, {ID: "F3", Name: "keys-xoxp-2-b.env"}}},
			pipeline.Event{Text: "see files", Files: []pipeline.File{
				{ID: "F1", Name: "[redacted: chat token].txt"}, {ID: "F2", Name: "plain.txt"}, {ID: "F3", Name: "keys-[redacted: chat token].env"}}}},
		{"nothing secret unchanged",
			&pipeline.Event{Kind: pipeline.KindMessage, Text: "hello"},
			pipeline.Event{Text: "hello"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tracer, sr := newTracer()
			var seen pipeline.Event
			var seenArgs string
			next := pipeline.HandlerFunc(func(_ context.Context, ev *pipeline.Event) error {
				seen = *ev
				seen.Files = append([]pipeline.File(nil), ev.Files...)
				if ev.Command != nil {
					seenArgs = ev.Command.Args
				}
				return nil
			})
			h := pipeline.Chain(next, pipeline.NewRedact(tracer, nil, tokenRedactor()))
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if seen.Text != tt.want.Text {
				t.Errorf("next saw Text %q, want %q", seen.Text, tt.want.Text)
			}
			if tt.want.Command != nil && seenArgs != tt.want.Command.Args {
				t.Errorf("next saw Args %q, want %q", seenArgs, tt.want.Command.Args)
			}
			if len(seen.Files) != len(tt.want.Files) {
				t.Fatalf("next saw %d files, want %d", len(seen.Files), len(tt.want.Files))
			}
			for i, f := range tt.want.Files {
				if seen.Files[i] != f {
					t.Errorf("file %d = %+v, want %+v", i, seen.Files[i], f)
				}
			}
			assertSpan(t, sr, "pipeline.redact", pipeline.OutcomePass, "")
		})
	}
}

func TestRedactReturnsNextError(t *testing.T) {
	tracer, sr := newTracer()
	errNext := errors.New("later failure")
	next := &terminal{err: errNext}
	h := pipeline.Chain(next, pipeline.NewRedact(tracer, nil, tokenRedactor()))
	if err := h.Handle(context.Background(), &pipeline.Event{Kind: pipeline.KindMessage}); err != errNext {
		t.Fatalf("err = %v, want next's", err)
	}
	assertErrorSpan(t, sr, "pipeline.redact")
}
