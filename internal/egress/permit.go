package egress

import (
	"context"

	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// turnOf is the turn a connection's command runs for, if any (a tool
// server runs for none).
func turnOf(ctx context.Context) (*pipeline.Turn, bool) {
	t, ok := tools.TurnFromContext(ctx)
	return t, ok && t.Event != nil
}

// threadHost is how a card's host is stored: the name alone for the web's
// ports (80 and 443 both), name:port for another.
func threadHost(host string, port int) string { return display(host, port) }

// permit decides a request for host:port: the allowlist, then the
// thread's approved hosts, then, in ask mode, a card. why is the reason
// of a refusal, for the log.
func (p *Proxy) permit(ctx context.Context, host string, port int) (ok bool, why string) {
	for _, h := range p.o.Allowed() {
		if h.Matches(host, port) {
			return true, ""
		}
	}
	t, inThread := turnOf(ctx)
	if !inThread {
		return false, "not on the allowlist"
	}
	key, thread := threadHost(host, port), t.Event.ThreadKey()
	if p.o.Threads != nil {
		allowed, err := p.o.Threads.EgressHostAllowed(ctx, thread, key)
		if err != nil {
			p.o.Log.ErrorContext(ctx, "egress: the thread's hosts", "thread", thread, "err", err)
			return false, "the thread's hosts are unavailable"
		}
		if allowed {
			return true, ""
		}
	}
	if t.Access.Mode != pipeline.ModeAsk || p.o.Cards == nil || p.o.Threads == nil {
		return false, "not on the allowlist"
	}
	if p.ask(ctx, t, key) {
		return true, ""
	}
	return false, "the card was not approved"
}

// ask asks the network card for key in t's thread, once at a time per
// thread and host; it reports whether the host was approved (and stored).
func (p *Proxy) ask(ctx context.Context, t *pipeline.Turn, key string) bool {
	thread := t.Event.ThreadKey()
	id := thread + "\x00" + key
	p.mu.Lock()
	if w, ok := p.asking[id]; ok {
		p.mu.Unlock()
		select {
		case <-w.done:
			return w.ok
		case <-ctx.Done():
			return false
		}
	}
	w := &pending{done: make(chan struct{})}
	p.asking[id] = w
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.asking, id)
		p.mu.Unlock()
		close(w.done)
	}()
	out, err := p.o.Cards.Ask(ctx, approval.Request{
		ThreadKey:   thread,
		ChannelID:   t.Event.ChannelID,
		ThreadTS:    t.Event.RootTS(),
		RequestedBy: t.Event.UserID,
		Category:    Category,
		Summary:     CardSummary(p.o.Redact(key)),
		Digest:      approval.Digest(Category, []byte(key)),
	})
	if err != nil {
		p.o.Log.ErrorContext(ctx, "egress: network card", "thread", thread, "err", err)
		return false
	}
	if !out.Approved() {
		return false
	}
	if err := p.o.Threads.AllowEgressHost(ctx, thread, key, out.ID); err != nil {
		p.o.Log.ErrorContext(ctx, "egress: store the approved host", "thread", thread, "err", err)
		return false
	}
	w.ok = true
	return true
}
