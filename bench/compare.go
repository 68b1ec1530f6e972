package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// compareConfig is what -original asks for: the simulator side by side
// with the original runtime's, on the original's own scenario files.
type compareConfig struct {
	dir   string // an already-built checkout of the original runtime
	cmd   string // its command that runs scenario files (they are appended), run in dir
	files string // its scenario files: a glob in dir
	skip  string // base names of the files that do not apply, comma-separated
	runs  int
}

// compare measures the original runtime's simulator and ours on the
// original's scenario files, the two runs alternated runs times (after
// one unmeasured run of each, which must pass), and prints the medians of
// wall time and peak RSS side by side, then ours on the shipped scenarios
// on one core and on all. The original is not built here: cfg.dir is a
// checkout ready to run cfg.cmd.
func compare(cfg compareConfig) error {
	dir, err := os.MkdirTemp("", "agent-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := build(dir)
	if err != nil {
		return err
	}
	orig, err := filepath.Abs(cfg.dir)
	if err != nil {
		return err
	}
	files, err := scenarioFiles(orig, cfg.files, cfg.skip)
	if err != nil {
		return err
	}
	prog, args, err := originalCommand(orig, cfg.cmd)
	if err != nil {
		return err
	}
	abs := make([]string, len(files))
	for i, f := range files {
		abs[i] = filepath.Join(orig, f)
	}
	// Both simulators write temporary homes; keep them in the bench's
	// directory, which goes at the end.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	env := []string{"TMPDIR=" + tmp}
	ours := func() (time.Duration, int64, error) {
		return measureIn(dir, "", bin, env, nil, append([]string{"sim", "run"}, abs...)...)
	}
	theirs := func() (time.Duration, int64, error) {
		return measureIn(dir, orig, prog, env, nil, append(slices.Clone(args), files...)...)
	}
	fmt.Fprintf(os.Stderr, "%d scenario files of %s; original: %s %s FILES\n", len(files), orig, prog, strings.Join(args, " "))
	// One run of each first: the page cache, the original's transpiler
	// cache; and both must pass.
	for _, f := range []func() (time.Duration, int64, error){ours, theirs} {
		if _, _, err := f(); err != nil {
			return err
		}
	}
	var ourWalls, ourPeaks, theirWalls, theirPeaks []time.Duration
	for range cfg.runs {
		w, r, err := ours()
		if err != nil {
			return err
		}
		ourWalls, ourPeaks = append(ourWalls, w), append(ourPeaks, time.Duration(r))
		if w, r, err = theirs(); err != nil {
			return err
		}
		theirWalls, theirPeaks = append(theirWalls, w), append(theirPeaks, time.Duration(r))
	}
	ow, op, tw, tp := median(ourWalls), int64(median(ourPeaks)), median(theirWalls), int64(median(theirPeaks))
	what := fmt.Sprintf("the original's %d scenario files", len(files))
	rows := []row{
		{"`agent sim run`, " + what + ": wall, peak RSS", "—", fmt.Sprintf("%s, %s", ms(ow), mib(op))},
		{"The original's simulator, " + what + ": wall, peak RSS", "—", fmt.Sprintf("%s, %s", ms(tw), mib(tp))},
		{"Ours against the original: speed, peak RSS", "≥ 10× faster, ≤ ¼",
			fmt.Sprintf("%.1f× faster, %.2f of it", float64(tw)/float64(max(ow, 1)), float64(op)/float64(max(tp, 1)))},
	}
	sim, err := simRows(bin, cfg.runs)
	if err != nil {
		return err
	}
	rows = append(rows, sim...)
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `go run ./bench -original %s -original-cmd %q` on %s/%s, %d cores (%s; medians of %d alternated runs).\n\n",
		cfg.dir, cfg.cmd, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), cfg.runs)
	b.WriteString("| What | Goal | Measured |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.what, r.goal, r.got)
	}
	fmt.Print(b.String())
	return nil
}

// scenarioFiles lists the files of glob in dir (relative to it, sorted),
// without those whose base name is in skip (comma-separated).
func scenarioFiles(dir, glob, skip string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		return nil, err
	}
	skipped := strings.Split(skip, ",")
	var files []string
	for _, f := range all {
		if slices.Contains(skipped, filepath.Base(f)) {
			continue
		}
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no scenario files %s in %s", glob, dir)
	}
	slices.Sort(files)
	return files, nil
}

// originalCommand splits cmd into its program, found on PATH or, when it
// names a path, relative to dir (the launcher execs it as given), and its
// arguments.
func originalCommand(dir, cmd string) (string, []string, error) {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return "", nil, fmt.Errorf("empty -original-cmd")
	}
	prog := f[0]
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
	} else {
		p, err := exec.LookPath(prog)
		if err != nil {
			return "", nil, err
		}
		if prog, err = filepath.Abs(p); err != nil {
			return "", nil, err
		}
	}
	return prog, f[1:], nil
}
