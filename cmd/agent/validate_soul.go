package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/internal/soulx"
	"github.com/persona-runtime/agent/pkg/persona"
)

// validateSoulCommand is `agent validate-soul`: exit 0 when SOUL.md is
// valid (warnings allowed), 1 when required fields are missing, 2 when it
// cannot be loaded. With --diff OLD NEW it prints who gains or loses what
// between two files instead: exit 1 when anyone gains access, 0 otherwise,
// 2 when either file cannot be loaded.
func (c *cli) validateSoulCommand() *ffcli.Command {
	var soul string
	var diff bool
	return c.command(command{
		name:  "validate-soul",
		usage: "agent validate-soul [--soul PATH] | agent validate-soul --diff OLD NEW",
		help:  "validate SOUL.md: exit 0 ok, 1 required fields missing, 2 load failure",
		longHelp: "With --diff OLD NEW: every change of who may do what between two SOUL.md files, one line each,\n" +
			"\"+\" for access gained and \"-\" for access lost; exit 1 when anyone gains access (a change to\n" +
			"review), 0 otherwise, 2 when a file does not load.",
		configExit: 2,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&soul, "soul", "", "SOUL.md to validate (default: SOUL.md under the home)")
			fs.BoolVar(&diff, "diff", false, "compare the access of two SOUL.md files: --diff OLD NEW")
		},
		run: func(_ context.Context, inv *invocation, args []string) error {
			if diff {
				if len(args) != 2 || soul != "" {
					return &exitError{code: 2, err: errors.New("usage: agent validate-soul --diff OLD NEW")}
				}
				return validateSoulDiff(inv, args[0], args[1])
			}
			return validateSoul(inv, inv.soulPath(soul))
		},
	})
}

// validateSoulDiff prints persona.Diff between the files at before and
// after; exit 1 when a line gains access.
func validateSoulDiff(inv *invocation, before, after string) error {
	var ps [2]*persona.Persona
	for i, path := range []string{before, after} {
		src, err := os.ReadFile(path)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("read SOUL.md: %w", err)}
		}
		if ps[i], err = persona.Parse(path, src); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	changes := persona.Diff(ps[0], ps[1])
	if len(changes) == 0 {
		fmt.Fprintln(inv.stdout, "no change of access")
		return nil
	}
	for _, c := range changes {
		fmt.Fprintln(inv.stdout, c.String())
	}
	if persona.Gains(changes) {
		return &exitError{code: 1, err: errors.New("access gained: review the + lines")}
	}
	return nil
}

func validateSoul(inv *invocation, path string) error {
	cfg := inv.cfg
	src, err := os.ReadFile(path)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("read SOUL.md: %w", err)}
	}
	p, err := persona.Parse(path, src)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if cfg.SoulExtract == "model" {
		if err := cfg.ValidateModel(); err != nil {
			return &exitError{code: 2, err: err}
		}
		log := inv.warnings()
		x, err := soulx.NewExtractor(cfg, log, noop.NewTracerProvider().Tracer(""), nil)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		if p, err = x.Extract(context.Background(), src, p, log, path); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	for _, w := range p.WarningLines() {
		fmt.Fprintln(inv.stderr, "warning: "+w)
	}
	if missing := p.Missing(); len(missing) > 0 {
		return &exitError{code: 1, err: errors.New("missing required fields: " + strings.Join(missing, ", "))}
	}
	fmt.Fprintf(inv.stdout, "%s is valid\n\n%s", path, p.Summary())
	return nil
}
