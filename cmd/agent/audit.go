package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/store"
)

// auditRecord is one approval as `agent audit --json` prints it.
type auditRecord struct {
	ID          string     `json:"id"`
	Thread      string     `json:"thread"`
	Category    string     `json:"category"`
	Tool        string     `json:"tool,omitempty"`
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
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	since := fs.Duration("since", 7*24*time.Hour, "show approvals requested within this duration")
	asJSON := fs.Bool("json", false, "print one JSON object per approval")
	cfg, finish := c.configFlags(fs, "text")
	return &ffcli.Command{
		Name:       "audit",
		ShortUsage: "agent audit [--since DURATION] [--json]",
		ShortHelp:  "print the approval audit record (requested, decided or timed out, by whom, the digest)",
		FlagSet:    fs,
		Exec: func(ctx context.Context, _ []string) error {
			if err := finish(); err != nil {
				return err
			}
			st, err := openDatabase(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.ApprovalsSince(ctx, time.Now().Add(-*since))
			if err != nil {
				return err
			}
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				for _, a := range list {
					r := auditRecord{ID: a.ID, Thread: a.ThreadKey, Category: a.Category, Tool: a.Tool, Summary: a.Summary,
						Digest: a.Digest, RequestedBy: a.RequestedBy, RequestedAt: a.RequestedAt, State: a.State, DecidedBy: a.DecidedBy}
					if a.State != store.ApprovalRequested {
						at := a.DecidedAt
						r.DecidedAt = &at
					}
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "REQUESTED\tCATEGORY\tSTATE\tBY\tREQUESTER\tDIGEST\tSUMMARY")
			for _, a := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.RequestedAt.Local().Format(time.DateTime), a.Category, a.State,
					orDash(a.DecidedBy), orDash(a.RequestedBy), orDash(a.Digest), oneLine(a.Summary, 60))
			}
			return w.Flush()
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
