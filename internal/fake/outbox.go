package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Outbox is a recording pipeline.Outbox: it keeps every post and update,
// in order. The zero value is ready to use: the n-th post gets ts 100.<n>
// and updates succeed.
type Outbox struct {
	// PostFn, when set, answers each post once it is recorded.
	PostFn func(ctx context.Context, markdown string) (ts string, err error)
	// UpdateFn, when set, answers each update once it is recorded.
	UpdateFn func(ctx context.Context, ts, markdown string) error

	mu      sync.Mutex
	posts   []string
	updates []string
}

// Post records markdown.
func (o *Outbox) Post(ctx context.Context, markdown string) (string, error) {
	o.mu.Lock()
	o.posts = append(o.posts, markdown)
	n := len(o.posts)
	o.mu.Unlock()
	if o.PostFn != nil {
		return o.PostFn(ctx, markdown)
	}
	return fmt.Sprintf("100.%d", n), nil
}

// Update records "<ts> <markdown>".
func (o *Outbox) Update(ctx context.Context, ts, markdown string) error {
	o.mu.Lock()
	o.updates = append(o.updates, ts+" "+markdown)
	o.mu.Unlock()
	if o.UpdateFn != nil {
		return o.UpdateFn(ctx, ts, markdown)
	}
	return nil
}

// Posts are the texts posted so far.
func (o *Outbox) Posts() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.posts)
}

// Updates are the updates so far, each "<ts> <markdown>".
func (o *Outbox) Updates() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.updates)
}
