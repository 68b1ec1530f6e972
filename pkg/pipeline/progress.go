package pipeline

import (
	"context"
	"sync"
)

// Progress is how far the handling of one inbound event got: whether it
// reached the agent stage, and whether anything was said in its thread.
// The inbox (internal/inbox) puts one in the context of each event it
// keeps; the agent stage and its outbox report to it. A nil *Progress
// ignores every call.
type Progress struct {
	mu          sync.Mutex
	reached     bool
	answering   bool
	answered    bool
	onAnswering func()
	onAnswer    func()
}

// NewProgress returns a Progress that calls onAnswering once, just before
// the first message is posted for the event, and onAnswer once, when it
// was; either may be nil.
func NewProgress(onAnswering, onAnswer func()) *Progress {
	return &Progress{onAnswering: onAnswering, onAnswer: onAnswer}
}

// Answering records that the first message is about to be posted; the
// first call runs onAnswering before it returns.
func (p *Progress) Answering() {
	if p != nil {
		p.mark(&p.answering, p.onAnswering)
	}
}

// AnsweringRecorded records that the caller marked the event answering
// itself, in the write that stored the message about to be posted: later
// Answering calls do not run onAnswering.
func (p *Progress) AnsweringRecorded() {
	if p != nil {
		p.mark(&p.answering, nil)
	}
}

// IsAnswering reports whether the event was marked answering.
func (p *Progress) IsAnswering() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answering
}

// Reach records that the event reached the agent stage.
func (p *Progress) Reach() {
	if p != nil {
		p.mark(&p.reached, nil)
	}
}

// Answer records that a message was posted for the event; the first call
// runs onAnswer before it returns.
func (p *Progress) Answer() {
	if p != nil {
		p.mark(&p.answered, p.onAnswer)
	}
}

// mark sets *flag, a field of p, and runs first (if any) when it was not
// set yet, after the lock is released: first writes to the store.
func (p *Progress) mark(flag *bool, first func()) {
	p.mu.Lock()
	was := *flag
	*flag = true
	p.mu.Unlock()
	if !was && first != nil {
		first()
	}
}

// State reports whether the event reached the agent and was answered.
func (p *Progress) State() (reached, answered bool) {
	if p == nil {
		return false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reached, p.answered
}

type progressKey struct{}

// NewContextWithProgress returns ctx carrying p.
func NewContextWithProgress(ctx context.Context, p *Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressFromContext returns the Progress in ctx, or nil.
func ProgressFromContext(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}
