package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "0d"},
		{in: "36h", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "-1d", err: `not a number of days: "-1d"`},
		{in: "d", err: `not a number of days: "d"`},
		{in: "a week", err: `time: invalid duration "a week"`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSince(tt.in)
			switch {
			case tt.err != "" && (err == nil || err.Error() != tt.err):
				t.Fatalf("parseSince(%q) = %v, %v; want the error %q", tt.in, got, err, tt.err)
			case tt.err == "" && (err != nil || got != tt.want):
				t.Fatalf("parseSince(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// Every command's --since is the one parser's, and takes days.
func TestSinceTakesDaysEverywhere(t *testing.T) {
	c := &cli{getenv: func(string) string { return "" }}
	seen := 0
	for _, cmd := range c.commands(nil) {
		f := cmd.FlagSet.Lookup("since")
		if f == nil {
			continue
		}
		seen++
		if _, ok := f.Value.(sinceFlag); !ok {
			t.Errorf("agent %s: --since is a %T, not the shared sinceFlag", cmd.Name, f.Value)
		}
		if f.DefValue != defaultSince.String() {
			t.Errorf("agent %s: --since defaults to %s, want %s", cmd.Name, f.DefValue, defaultSince)
		}
	}
	if seen < 2 {
		t.Fatalf("%d commands take --since; audit and feedback do", seen)
	}
	for _, name := range []string{"audit", "feedback"} {
		env := map[string]string{"AGENT_HOME": t.TempDir()}
		if _, stderr, code := runCLI(t, env, name, "--since", "7d"); code != 0 {
			t.Errorf("agent %s --since 7d: exit %d: %s", name, code, strings.TrimSpace(stderr))
		}
	}
}

// A command line naming a command builds that command alone, under the
// name it is run by; any other line builds them all.
func TestCommandsBuiltByName(t *testing.T) {
	c := &cli{getenv: func(string) string { return "" }}
	all := c.commands(nil)
	if len(all) < 15 {
		t.Fatalf("%d commands", len(all))
	}
	for _, cmd := range all {
		got := c.commands([]string{cmd.Name, "--help"})
		if len(got) != 1 || got[0].Name != cmd.Name {
			var names []string
			for _, g := range got {
				names = append(names, g.Name)
			}
			t.Errorf("commands(%q) built %v, want it alone", cmd.Name, names)
		}
	}
	for _, args := range [][]string{{}, {"--help"}, {"strat"}, {"-h", "start"}} {
		if got := c.commands(args); len(got) != len(all) {
			t.Errorf("commands(%q) built %d commands, want all %d", args, len(got), len(all))
		}
	}
}
