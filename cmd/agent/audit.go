package main

import (
	"context"
	"fmt"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// auditRecord is one approval as `agent audit --json` prints it.
type auditRecord struct {
	ID       string `json:"id"`
	Thread   string `json:"thread"`
	Category string `json:"category"`
	Tool     string `json:"tool,omitempty"`
	// ActsAs is the tool server whose tool acted with the requester's own
	// account ("auth": "oauth").
	ActsAs      string     `json:"acts_as,omitempty"`
	Summary     string     `json:"summary"`
	Digest      string     `json:"digest"`
	RequestedBy string     `json:"requested_by"`
	RequestedAt time.Time  `json:"requested_at"`
	State       string     `json:"state"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
}

// auditCommand is `agent audit`: the approvals' audit record.
func (c *cli) auditCommand() *ffcli.Command {
	return c.command(command{
		name:  "audit",
		usage: "agent audit [--since DURATION] [--json]",
		help:  "print the approval audit record (requested, decided or timed out, by whom, the digest)",
		since: "show approvals requested within this `duration`",
		json:  "approval",
		run:   audit,
	})
}

func audit(ctx context.Context, inv *invocation, _ []string) error {
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	list, err := st.ApprovalsSince(ctx, inv.cutoff())
	if err != nil {
		return err
	}
	if inv.json {
		records := make([]auditRecord, 0, len(list))
		for _, a := range list {
			r := auditRecord{ID: a.ID, Thread: a.ThreadKey, Category: a.Category, Tool: a.Tool, ActsAs: a.ActsAs, Summary: a.Summary,
				Digest: a.Digest, RequestedBy: a.RequestedBy, RequestedAt: a.RequestedAt, State: a.State, DecidedBy: a.DecidedBy}
			if a.State != store.ApprovalRequested {
				at := a.DecidedAt
				r.DecidedAt = &at
			}
			records = append(records, r)
		}
		return printJSON(inv.stdout, records)
	}
	w := newTable(inv.stdout, "REQUESTED\tCATEGORY\tSTATE\tBY\tREQUESTER\tDIGEST\tSUMMARY")
	for _, a := range list {
		summary := a.Summary
		if a.ActsAs != "" { // as the card said it
			summary = pipeline.ActsAs{User: a.RequestedBy, Server: a.ActsAs}.Sentence(func(s string) string { return s }) + " " + summary
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.RequestedAt.Local().Format(time.DateTime), a.Category, a.State,
			orDash(a.DecidedBy), orDash(a.RequestedBy), orDash(a.Digest), oneLine(summary, 60))
	}
	return w.Flush()
}
