package agent

import (
	"cmp"
	"context"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The ledger: every model call's tokens are one row of model_usage (the
// one record of tokens: budgets, `agent usage`). A call's row goes with
// the write of its answer (store.Answer.Spent, turn.keep) or, when no
// answer's write takes it (an empty answer, a failed write, a
// compaction's summary), in a write of its own (recordUsage).

// spent is the row of model_usage of one model call of t: Budget.Spent's
// (which counts its cost too), or made here without budgets.
func (e *Engine) spent(t *pipeline.Turn, resp *anthropic.Message) *store.UsageRecord {
	model, u := cmp.Or(string(resp.Model), e.o.Model.Model()), storeUsage(resp.Usage)
	if e.o.Budget != nil {
		r := e.o.Budget.Spent(t, model, u)
		return &r
	}
	return &store.UsageRecord{At: e.o.Now(), ThreadKey: t.Event.ThreadKey(), ChannelID: t.Event.ChannelID,
		UserID: t.Event.UserID, Model: model, Usage: u}
}

// recordUsage stores r in a write of its own, even when the turn is being
// cancelled: the spend counts even when the turn does not go on. A failed
// write is logged: the reply is worth more than the count.
func (e *Engine) recordUsage(ctx context.Context, r *store.UsageRecord) {
	ctx = context.WithoutCancel(ctx)
	if err := e.o.History.RecordUsage(ctx, *r); err != nil {
		e.o.Log.WarnContext(ctx, "record model usage", "thread", r.ThreadKey, "err", err)
	}
}

// beside runs f beside the turn, off its path; Wait waits for it.
func (e *Engine) beside(f func()) {
	e.bg.Add(1)
	e.work.Go(func() {
		defer e.bg.Done()
		f()
	})
}

func storeUsage(u anthropic.Usage) store.Usage {
	return store.Usage{Input: u.InputTokens, Output: u.OutputTokens,
		CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}
