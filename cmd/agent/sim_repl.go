package main

import (
	"context"
	"errors"
	"flag"
)

// simREPLFlags and simREPL are replaced by the REPL (in progress).
func (c *cli) simREPLFlags() *flag.FlagSet { return flag.NewFlagSet("sim", flag.ContinueOnError) }

func (c *cli) simREPL(context.Context, []string) error {
	return errors.New("sim: the REPL is not built yet")
}
