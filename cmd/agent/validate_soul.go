package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/pkg/persona"
)

// validateSoulCommand is `agent validate-soul`: exit 0 when SOUL.md is
// valid (warnings allowed), 1 when required fields are missing, 2 when it
// cannot be loaded.
func (c *cli) validateSoulCommand() *ffcli.Command {
	fs := flag.NewFlagSet("validate-soul", flag.ContinueOnError)
	soul := fs.String("soul", "", "SOUL.md to validate (default: SOUL.md under the home)")
	cfg, finish := c.configFlags(fs, "text")
	return &ffcli.Command{
		Name:       "validate-soul",
		ShortUsage: "agent validate-soul [--soul PATH]",
		ShortHelp:  "validate SOUL.md: exit 0 ok, 1 required fields missing, 2 load failure",
		FlagSet:    fs,
		Exec: func(context.Context, []string) error {
			if err := finish(); err != nil {
				return &exitError{code: 2, err: err}
			}
			path := *soul
			if path == "" {
				path = filepath.Join(cfg.Home, "SOUL.md")
			}
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
				log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				x, err := newExtractor(cfg, log, noop.NewTracerProvider().Tracer(""), nil)
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				if p, err = x.extract(context.Background(), src, p, log, path); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			for _, w := range p.WarningLines() {
				fmt.Fprintln(c.stderr, "warning: "+w)
			}
			if missing := p.Missing(); len(missing) > 0 {
				return &exitError{code: 1, err: errors.New("missing required fields: " + strings.Join(missing, ", "))}
			}
			fmt.Fprintf(c.stdout, "%s is valid\n\n%s", path, p.Summary())
			return nil
		},
	}
}
