package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Result is what a tool returns to the model.
type Result struct {
	// Text is the tool_result content.
	Text string
	// IsError marks a refused or failed call; Text is then a one-line reason.
	IsError bool
}

// Errorf returns an error Result.
func Errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is one tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the input object.
	Schema json.RawMessage
	// Call runs the tool. A returned error is a failure of the runtime
	// (reported to the model as an error result and logged); a refusal the
	// model should see is a Result with IsError.
	Call func(ctx context.Context, input json.RawMessage) (Result, error)
}

// Registry is the set of tools of the runtime, in a stable order (so the
// tools block of every request is byte-identical and cacheable).
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	order []string
	// version counts the Adds: a user of List converts again when it
	// changed.
	version uint64
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]Tool{}} }

// Add registers tools; a duplicate or unnamed tool is a wiring mistake and
// panics.
func (r *Registry) Add(ts ...Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range ts {
		if t.Name == "" || t.Call == nil || len(t.Schema) == 0 || !json.Valid(t.Schema) {
			panic("tools: Add of an incomplete tool " + t.Name)
		}
		if _, dup := r.tools[t.Name]; dup {
			panic("tools: duplicate tool " + t.Name)
		}
		r.tools[t.Name] = t
		r.order = append(r.order, t.Name)
	}
	sort.Strings(r.order)
	r.version++
}

// Version changes each time tools are added.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List returns the tools sorted by name.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.tools[n])
	}
	return out
}

// Call decodes nothing itself: it finds the tool and runs it, turning an
// unknown name into an error result the model can read.
func (r *Registry) Call(ctx context.Context, name string, input json.RawMessage) (Result, error) {
	t, ok := r.Get(name)
	if !ok {
		return Errorf("unknown tool %q", name), nil
	}
	return t.Call(ctx, input)
}

type turnKey struct{}

// NewContextWithTurn returns ctx carrying the turn the tools act for: its
// thread, its outbox and its access.
func NewContextWithTurn(ctx context.Context, t *pipeline.Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// TurnFromContext returns the turn the tools act for.
func TurnFromContext(ctx context.Context) (*pipeline.Turn, bool) {
	t, ok := ctx.Value(turnKey{}).(*pipeline.Turn)
	return t, ok && t != nil
}

// decode unmarshals a tool input strictly enough to give the model a
// useful one-line error.
func decode(input json.RawMessage, v any) error {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if err := json.Unmarshal(input, v); err != nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}
