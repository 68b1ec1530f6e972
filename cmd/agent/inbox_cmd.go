package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/store"
)

// inboxRecord is one event as `agent inbox --json` prints it.
type inboxRecord struct {
	EventID    string    `json:"event_id"`
	Kind       string    `json:"kind"`
	Thread     string    `json:"thread"`
	User       string    `json:"user,omitempty"`
	State      string    `json:"state"`
	Attempts   int       `json:"attempts"`
	TraceID    string    `json:"trace_id,omitempty"`
	Error      string    `json:"error,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// inboxStates are the states `agent inbox --state` takes.
var inboxStates = map[string]bool{store.InboxReceived: true, store.InboxRunning: true, store.InboxAnswering: true,
	store.InboxAnswered: true, store.InboxFailed: true, store.InboxDropped: true}

// inboxCommand is `agent inbox`: the durable inbox, for an operator.
func (c *cli) inboxCommand() *ffcli.Command {
	fs := flag.NewFlagSet("inbox", flag.ContinueOnError)
	state := fs.String("state", "", "only events in this state: received, running, answering, answered, failed or dropped")
	asJSON := fs.Bool("json", false, "print one JSON object per event")
	cfg, finish := c.configFlags(fs, "text")
	return &ffcli.Command{
		Name:       "inbox",
		ShortUsage: "agent inbox [--state received|running|answered|failed] [--json]",
		ShortHelp:  "list the durable inbox: each message's state, attempts and trace id",
		FlagSet:    fs,
		Exec: func(ctx context.Context, _ []string) error {
			if err := finish(); err != nil {
				return err
			}
			if *state != "" && !inboxStates[*state] {
				return &exitError{code: 2, err: fmt.Errorf("--state: unknown state %q (want received, running, answering, answered, failed or dropped)", *state)}
			}
			st, err := openDatabase(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.InboxList(ctx, *state, 0)
			if err != nil {
				return err
			}
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				for _, e := range list {
					if err := enc.Encode(inboxRecord{EventID: e.EventID, Kind: e.Kind, Thread: e.ChannelID + ":" + e.ThreadTS,
						User: e.UserID, State: e.State, Attempts: e.Attempts, TraceID: e.TraceID, Error: e.Error,
						ReceivedAt: e.ReceivedAt, UpdatedAt: e.UpdatedAt}); err != nil {
						return err
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "RECEIVED\tSTATE\tATTEMPTS\tTHREAD\tUSER\tEVENT\tTRACE\tERROR")
			for _, e := range list {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s:%s\t%s\t%s\t%s\t%s\n", e.ReceivedAt.Local().Format(time.DateTime), e.State, e.Attempts,
					e.ChannelID, e.ThreadTS, orDash(e.UserID), e.EventID, orDash(e.TraceID), orDash(oneLine(e.Error, 60)))
			}
			return w.Flush()
		},
	}
}

// openDatabase opens the configured database for an operator command.
func openDatabase(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.Database(), store.Options{})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return st, nil
}
