package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/record"
	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/pkg/fsutil"
	"github.com/persona-runtime/agent/pkg/persona"
)

// simRecordCommand is `agent sim record <channel> <thread_ts>`: a stored
// thread becomes a scenario file (internal/sim/record).
func (c *cli) simRecordCommand() *ffcli.Command {
	var out, soul string
	var update bool
	return c.command(command{
		name:  "record",
		usage: "agent sim record [--out FILE] [--update] [--soul PATH] <channel> <thread_ts>",
		help:  "turn a stored thread into a scenario that sim run replays",
		longHelp: "The people's messages become sends by their user ids, the persona's model answers the scripted\n" +
			"model's (model:), its cards and their clicks card and click steps, its replies the expectations.\n" +
			"Every text passes the redactor (the credentials and SOUL.md's ## Redaction). --update runs the\n" +
			"scenario once and writes its golden transcript (needs --out).",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&out, "out", "", "write the scenario to `FILE` (default: standard output)")
			fs.BoolVar(&update, "update", false, "run the scenario and write its golden file beside it")
			fs.StringVar(&soul, "soul", "", "the SOUL.md the thread ran under (default: SOUL.md under the home)")
		},
		run: func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 2 {
				return &exitError{code: 2, err: errors.New("usage: agent sim record [--out FILE] [--update] <channel> <thread_ts>")}
			}
			if update && out == "" {
				return &exitError{code: 2, err: errors.New("--update needs --out: the golden file is written beside the scenario")}
			}
			return simRecord(ctx, c, inv, inv.soulPath(soul), out, update, record.Thread{Channel: args[0], ThreadTS: args[1]})
		},
	})
}

func simRecord(ctx context.Context, c *cli, inv *invocation, soulPath, out string, update bool, th record.Thread) error {
	src, err := os.ReadFile(soulPath)
	if err != nil {
		return fmt.Errorf("read SOUL.md: %w", err)
	}
	p, err := persona.Parse(soulPath, src)
	if err != nil {
		return err
	}
	patterns, err := redact.PersonaPatterns(p)
	if err != nil {
		return err
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	file, notes, err := record.Record(ctx, st, p, redact.New(inv.cfg.Secrets(), patterns), th)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(inv.stderr, "note: "+n)
	}
	if out == "" {
		_, err := inv.stdout.Write(file)
		return err
	}
	if err := fsutil.WriteFileAtomic(out, file, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "recorded %s %s in %s\n", th.Channel, th.ThreadTS, out)
	if !update {
		return nil
	}
	r := runner.File(ctx, out, runner.Config{LandlockABI: c.landlock, Golden: golden.Update})
	if r.Err != nil {
		return fmt.Errorf("the recorded scenario does not pass: %w", r.Err)
	}
	fmt.Fprintf(inv.stdout, "PASS %s (%s)\n", out, r.Note)
	return nil
}
