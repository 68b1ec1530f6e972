package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/memory"
)

// memories is the service's memory (internal/memory), made once the
// redactor is: a memory holding what it would redact is refused. Its
// persona-wide memories asked by the model wait on the approval gate's
// cards (none before the gate is made: they are refused).
func (s *service) memories() *memory.Memories {
	if s.memory == nil {
		s.memory = &memory.Memories{Store: s.store, Redact: s.redactor.Redact, NewID: s.memoryIDs, Log: s.log,
			RoleOf: s.persona.RoleOf}
		if s.gate != nil {
			s.memory.Cards = s.gate
		}
	}
	return s.memory
}

// memoryRecord is one memory as `agent memory --json` prints it.
type memoryRecord struct {
	ID        string    `json:"id"`
	Scope     string    `json:"scope"`
	Channel   string    `json:"channel"`
	ThreadTS  string    `json:"thread_ts,omitempty"`
	Author    string    `json:"author,omitempty"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// memoryCommand is `agent memory [list|export|forget <id>]`: every memory,
// for the operator.
func (c *cli) memoryCommand() *ffcli.Command {
	var dir string
	var flags *flag.FlagSet
	return c.command(command{
		name:  "memory",
		usage: "agent memory [list|export|forget <id>] [--json] [--dir DIR]",
		help:  "list, export (markdown) or forget what the persona remembers",
		json:  "memory",
		flags: func(fs *flag.FlagSet) {
			flags = fs
			fs.StringVar(&dir, "dir", "memories", "where export writes its markdown files")
		},
		run: func(ctx context.Context, inv *invocation, args []string) error {
			args, err := interspersed(flags, args)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			return runMemory(ctx, inv, args, dir)
		},
	})
}

// interspersed parses the flags fs finds among args, after the words too
// (`agent memory list --json`, as the usage line has it: the flag package
// stops at the first word), and returns the words.
func interspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) > 0 {
			words = append(words, args[0])
			args = args[1:]
		}
	}
	return words, nil
}

func runMemory(ctx context.Context, inv *invocation, args []string, dir string) error {
	what := "list"
	if len(args) > 0 {
		what = args[0]
	}
	switch {
	case what == "forget" && len(args) != 2, what != "forget" && len(args) > 1,
		what != "list" && what != "export" && what != "forget":
		return &exitError{code: 2, err: fmt.Errorf("usage: agent memory [list|export|forget <id>]")}
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	if what == "forget" {
		if err := st.ForgetMemory(ctx, args[1]); err != nil {
			return fmt.Errorf("forget: %w", err)
		}
		fmt.Fprintf(inv.stdout, "forgot memory %s\n", args[1])
		return nil
	}
	ms, err := st.Memories(ctx, "")
	if err != nil {
		return err
	}
	if what == "export" {
		files, err := memory.Export(dir, ms)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(inv.stdout, f)
		}
		return nil
	}
	if inv.json {
		records := make([]memoryRecord, 0, len(ms))
		for _, m := range ms {
			records = append(records, memoryRecord{ID: m.ID, Scope: m.Scope, Channel: m.Channel, ThreadTS: m.ThreadTS,
				Author: m.Author, Text: m.Text, CreatedAt: m.CreatedAt})
		}
		return printJSON(inv.stdout, records)
	}
	w := newTable(inv.stdout, "ID\tCREATED\tSCOPE\tCONVERSATION\tAUTHOR\tTEXT")
	for _, m := range ms {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.CreatedAt.Local().Format(time.DateTime), m.Scope,
			m.Channel, orDash(m.Author), oneLine(m.Text, 80))
	}
	return w.Flush()
}
