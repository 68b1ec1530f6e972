package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

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
	var state string
	return c.command(command{
		name:  "inbox",
		usage: "agent inbox [--state received|running|answered|failed] [--json]",
		help:  "list the durable inbox: each message's state, attempts and trace id",
		json:  "event",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&state, "state", "", "only events in this state: received, running, answering, answered, failed or dropped")
		},
		run: func(ctx context.Context, inv *invocation, _ []string) error { return listInbox(ctx, inv, state) },
	})
}

// listInbox prints the inbox's records (agent inbox).
func listInbox(ctx context.Context, inv *invocation, state string) error {
	if state != "" && !inboxStates[state] {
		return &exitError{code: 2, err: fmt.Errorf("--state: unknown state %q (want received, running, answering, answered, failed or dropped)", state)}
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	list, err := st.InboxList(ctx, state, 0)
	if err != nil {
		return err
	}
	if inv.json {
		records := make([]inboxRecord, 0, len(list))
		for _, e := range list {
			records = append(records, inboxRecord{EventID: e.EventID, Kind: e.Kind, Thread: e.ChannelID + ":" + e.ThreadTS,
				User: e.UserID, State: e.State, Attempts: e.Attempts, TraceID: e.TraceID, Error: e.Error,
				ReceivedAt: e.ReceivedAt, UpdatedAt: e.UpdatedAt})
		}
		return printJSON(inv.stdout, records)
	}
	w := newTable(inv.stdout, "RECEIVED\tSTATE\tATTEMPTS\tTHREAD\tUSER\tEVENT\tTRACE\tERROR")
	for _, e := range list {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s:%s\t%s\t%s\t%s\t%s\n", e.ReceivedAt.Local().Format(time.DateTime), e.State, e.Attempts,
			e.ChannelID, e.ThreadTS, orDash(e.UserID), e.EventID, orDash(e.TraceID), orDash(oneLine(e.Error, 60)))
	}
	return w.Flush()
}
