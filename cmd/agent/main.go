// Command agent is the persona agent runtime's command line: one binary
// with the service (start, dev: built and run by internal/service) and the
// operator commands (manifest, validate-soul, usage, sim, version, ...).
// It holds flags, output and exit codes, not behaviour. See the README for
// the configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/service"
)

func main() {
	// The sandbox helper (hidden): apply the rules, exec the command. It
	// runs before anything else, so it costs a process start and no more.
	if sandbox.IsHelper(os.Args) {
		os.Exit(sandbox.Main(os.Args[2:]))
	}
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			var q quietError
			if !errors.As(err, &q) {
				fmt.Fprintln(os.Stderr, err)
			}
		}
		os.Exit(exitCode(err))
	}
}

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// quietError is an exit status whose message was already printed.
type quietError struct{ code int }

func (e quietError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	var q quietError
	if errors.As(err, &q) {
		return q.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 1
}

// streams are the process's standard streams, injected for tests.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// cli is what every command gets: the environment, the arguments and the
// streams.
type cli struct {
	getenv func(string) string
	args   []string
	streams
	// simREPLConfig holds the flags of `agent sim` between parsing and Exec.
	simREPLConfig *simREPLConfig
	// env is the layered environment, read once for every command's flags
	// (envLoaded; envErr when a .env file did not parse).
	env       *config.Env
	envErr    error
	envLoaded bool
	// serviceDeps, set only by tests, adjusts what `agent start` gives the
	// service (a store that fails, a shorter prune timer, a kernel without
	// Landlock), so that a test reaches them through the real start path.
	serviceDeps func(*service.Deps)
	// landlock probes the kernel's Landlock ABI for the sandbox (start,
	// doctor, sim); nil asks the kernel. Set only by tests, to play a
	// kernel without Landlock (or with an older ABI) through the real
	// paths.
	landlock func() int
}

// landlockABI is the Landlock ABI of this kernel, through c.landlock when
// a test plays another kernel.
func (c *cli) landlockABI() int {
	if c.landlock != nil {
		return c.landlock()
	}
	return sandbox.LandlockABI()
}

// run is the whole program: it parses args, runs the command, and owns
// shutdown (SIGINT/SIGTERM cancel ctx). It writes only to the injected
// streams and reads the environment only through getenv.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return (&cli{getenv: getenv, args: args, streams: streams{stdin: stdin, stdout: stdout, stderr: stderr}}).run(ctx)
}

// run runs the command c.args names.
func (c *cli) run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := c.args

	root := &ffcli.Command{
		Name:        service.Name,
		ShortUsage:  "agent <command> [flags]",
		ShortHelp:   "the persona agent runtime",
		FlagSet:     flag.NewFlagSet(service.Name, flag.ContinueOnError),
		Subcommands: c.commands(args),
	}
	root.Exec = func(_ context.Context, rest []string) error {
		if len(rest) == 0 {
			fmt.Fprintln(c.stderr, ffcli.DefaultUsageFunc(root))
			return &exitError{code: 2, err: errors.New("no command given")}
		}
		return &exitError{code: 2, err: unknownCommand(rest[0], root.Subcommands)}
	}
	setOutput(root, c.stderr)
	// Before any flag is parsed: a credential on the command line is in
	// the process list and the shell's history, whichever command it was
	// given to.
	if err := config.RefuseCredentialFlags(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// An unknown or malformed flag: the flag package printed the
		// usage; the error says which.
		return &exitError{code: 2, err: err}
	}
	return root.Run(ctx)
}

// commands are the binary's commands, a file each; all but sim are built
// on the shared scaffolding of command.go. A command line that names one
// (args[0]) gets that one alone: building a command registers its flags
// and, for most, every setting's (a few milliseconds of each start, on
// 2 cores, for commands the line does not run). Anything else — help, a
// root flag, a misspelt name — gets them all, in this order, for the
// usage and the nearest name.
func (c *cli) commands(args []string) []*ffcli.Command {
	table := []struct {
		name  string
		build func() *ffcli.Command
	}{
		{"start", func() *ffcli.Command { return c.startCommand("start") }},
		{"dev", func() *ffcli.Command { return c.startCommand("dev") }},
		{"manifest", c.manifestCommand},
		{"validate-soul", c.validateSoulCommand},
		{"install-deps", c.installDepsCommand},
		{"sim", c.simCommand},
		{"audit", c.auditCommand},
		{"inbox", c.inboxCommand},
		{"memory", c.memoryCommand},
		{"doctor", c.doctorCommand},
		{"feedback", c.feedbackCommand},
		{"usage", c.usageCommand},
		{"schedules", c.schedulesCommand},
		{"connections", c.connectionsCommand},
		{"version", c.versionCommand},
	}
	if len(args) > 0 {
		for _, t := range table {
			if t.name == args[0] {
				return []*ffcli.Command{t.build()}
			}
		}
	}
	all := make([]*ffcli.Command, len(table))
	for i, t := range table {
		all[i] = t.build()
	}
	return all
}

// unknownCommand is the error for a command that is not one, naming the
// nearest one when it is close (a typo).
func unknownCommand(name string, cmds []*ffcli.Command) error {
	best, dist := "", 3 // at most two edits away
	for _, c := range cmds {
		if d := editDistance(name, c.Name); d < dist {
			best, dist = c.Name, d
		}
	}
	if best != "" {
		return fmt.Errorf("unknown command %q (did you mean %q?); see agent --help", name, best)
	}
	return fmt.Errorf("unknown command %q; see agent --help", name)
}

// editDistance is the Levenshtein distance of a and b, transpositions
// counted as one edit ("strat" is one edit from "start").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// setOutput sends every command's usage to w.
func setOutput(c *ffcli.Command, w io.Writer) {
	c.FlagSet.SetOutput(w)
	for _, s := range c.Subcommands {
		setOutput(s, w)
	}
}
