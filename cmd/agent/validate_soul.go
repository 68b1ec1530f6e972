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
// cannot be loaded.
func (c *cli) validateSoulCommand() *ffcli.Command {
	var soul string
	return c.command(command{
		name:       "validate-soul",
		usage:      "agent validate-soul [--soul PATH]",
		help:       "validate SOUL.md: exit 0 ok, 1 required fields missing, 2 load failure",
		configExit: 2,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&soul, "soul", "", "SOUL.md to validate (default: SOUL.md under the home)")
		},
		run: func(_ context.Context, inv *invocation, _ []string) error {
			return validateSoul(inv, inv.soulPath(soul))
		},
	})
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
