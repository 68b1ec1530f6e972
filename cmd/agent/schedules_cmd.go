package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
)

// newScheduleBook is the persona's book of schedules, shared by the
// /schedule commands and the agent_schedule tools. Its Notify is nil
// until the scheduler is wired: the scheduler sets it (and Now, to its
// clock) so that a change wakes its timer.
func (s *service) newScheduleBook(chat chatAPI, newID func() string) *commands.Schedules {
	// A configuration built by hand (the simulator's) has no limit set:
	// the default, not zero.
	return &commands.Schedules{Store: s.store, Now: time.Now, AgentZone: s.cfg.Zone, Max: cmp.Or(s.cfg.MaxSchedules, config.DefaultMaxSchedules),
		Profile: chat.UserProfile, NewID: newID, Log: s.log}
}

// scheduleRecord is one schedule as `agent schedules --json` prints it.
type scheduleRecord struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	Creator   string     `json:"creator"`
	Channel   string     `json:"channel"`
	ThreadTS  string     `json:"thread_ts,omitempty"`
	Target    string     `json:"target"`
	When      string     `json:"when"`
	TZ        string     `json:"tz"`
	Prompt    string     `json:"prompt"`
	NextRunAt *time.Time `json:"next_run_at,omitempty"`
	LastRunAt *time.Time `json:"last_run_at,omitempty"`
	Missed    int        `json:"missed"`
	Paused    bool       `json:"paused"`
	CreatedAt time.Time  `json:"created_at"`
}

// schedulesCommand is `agent schedules`: every schedule of the persona,
// whichever conversation it was made in, for an operator; `agent
// schedules remove <id>` removes one.
func (c *cli) schedulesCommand() *ffcli.Command {
	return c.command(command{
		name:  "schedules",
		usage: "agent schedules [--json] | agent schedules remove <id>",
		help:  "list the persona's schedules (id, when, target, next run, prompt), or remove one",
		json:  "schedule",
		run:   schedules,
	})
}

func schedules(ctx context.Context, inv *invocation, args []string) error {
	switch {
	case len(args) == 2 && args[0] == "remove":
		return removeSchedule(ctx, inv, args[1])
	case len(args) > 0:
		return &exitError{code: 2, err: errors.New("usage: agent schedules [--json] | agent schedules remove <id>")}
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	list, err := st.Schedules(ctx)
	if err != nil {
		return err
	}
	if inv.json {
		records := make([]scheduleRecord, 0, len(list))
		for _, sc := range list {
			records = append(records, scheduleRecord{ID: sc.ID, Name: sc.Name, Creator: sc.Creator, Channel: sc.Channel,
				ThreadTS: sc.ThreadTS, Target: string(sc.Target), When: sc.When, TZ: sc.TZ, Prompt: sc.Prompt,
				NextRunAt: timeOrNil(sc.NextRunAt), LastRunAt: timeOrNil(sc.LastRunAt), Missed: sc.Missed, Paused: sc.Paused,
				CreatedAt: sc.CreatedAt})
		}
		return printJSON(inv.stdout, records)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(inv.stdout, "no schedules")
		return err
	}
	w := newTable(inv.stdout, "ID\tWHEN\tTARGET\tNEXT RUN\tLAST RUN\tCREATOR\tWHERE\tPROMPT")
	for _, sc := range list {
		next := commands.ShowTime(sc.NextRunAt, sc.TZ)
		if sc.Paused {
			next = "paused"
		}
		last := "-"
		if !sc.LastRunAt.IsZero() {
			last = commands.ShowTime(sc.LastRunAt, sc.TZ)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sc.ID, sc.When, sc.Target, next, last, sc.Creator,
			strings.TrimSuffix(sc.Channel+":"+sc.ThreadTS, ":"), oneLine(sc.Prompt, 60))
	}
	return w.Flush()
}

// removeSchedule is `agent schedules remove <id>`. A running service's
// timer learns of it at its next wake: the claim of a removed schedule
// finds no row.
func removeSchedule(ctx context.Context, inv *invocation, id string) error {
	if !schedule.ValidID(id) {
		return fmt.Errorf("no schedule %q", id)
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	if err := st.RemoveSchedule(ctx, id); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no schedule %q", id)
	} else if err != nil {
		return err
	}
	_, err = fmt.Fprintf(inv.stdout, "removed schedule %s\n", id)
	return err
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
