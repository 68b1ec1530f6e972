// Command bench measures the runtime the way its operators meet it and
// prints one table: start-up, memory at rest and per session, the time
// from an event to its reply, the runtime's own time per turn, the
// simulator, the binary. It builds the static, stripped binary and runs it
// against the in-repo fakes (an instant model), so it needs no network.
//
//	go run ./bench                   # print the table
//	go run ./bench -readme README.md # and rewrite the README's table
//	go run ./bench -original DIR -original-cmd 'bun src/gateway/sim/cli.ts run'
//	                                 # the simulator beside the original's
//
// Figures are medians over -runs runs. A minimal bot —
// ack, the same model call, post — measured the same way is the yardstick
// for the event-to-reply time.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == minimalFlag {
		os.Exit(runMinimalBot(os.Args[2:]))
	}
	runs := flag.Int("runs", 10, "runs per start-up figure (medians)")
	events := flag.Int("events", 200, "events for the event-to-reply figures")
	sessions := flag.Int("sessions", 200, "live sessions for the per-session memory")
	readme := flag.String("readme", "", "rewrite the table between the bench markers of this file")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the service while it answers the timed events (5 s, AGENT_PPROF=1)")
	var cmp compareConfig
	flag.StringVar(&cmp.dir, "original", "", "instead of the table: the simulator side by side with the original runtime's, built in this checkout")
	flag.StringVar(&cmp.cmd, "original-cmd", "bun src/gateway/sim/cli.ts run", "the original's command that runs scenario files (appended), in its checkout")
	flag.StringVar(&cmp.files, "original-files", "src/gateway/sim/scenarios/*.yaml", "the original's scenario files, a glob in its checkout")
	flag.StringVar(&cmp.skip, "original-skip", "ingest-mgr.yaml,slash-authz.yaml", "the original's scenario files that do not apply (they expect /ingest deprecated)")
	flag.Parse()
	if cmp.dir != "" {
		cmp.runs = *runs
		if err := compare(cmp); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*runs, *events, *sessions, *readme); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// cpuProfile is where the service's CPU profile goes ("": none).
var cpuProfile string

// row is one line of the table.
type row struct{ what, goal, got string }

func run(runs, events, sessions int, readme string) error {
	dir, err := os.MkdirTemp("", "agent-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := build(dir)
	if err != nil {
		return err
	}
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}
	var rows []row

	soul := filepath.Join(dir, "SOUL.md")
	if err := os.WriteFile(soul, []byte(benchSoul), 0o600); err != nil {
		return err
	}
	for _, c := range []struct {
		args []string
		goal string
	}{
		{[]string{"version"}, "≤ 10 ms, —"},
		{[]string{"validate-soul", "--soul", soul}, "—"},
	} {
		wall, rss, err := repeat(runs, bin, nil, c.args...)
		if err != nil {
			return err
		}
		rows = append(rows, row{"`agent " + c.args[0] + "`: wall, peak RSS", c.goal, fmt.Sprintf("%s, %s", ms(wall), mib(rss))})
	}

	svc, err := measureService(bin, dir, runs, events, sessions)
	if err != nil {
		return err
	}
	rows = append(rows, svc...)

	sim, err := simRows(bin, runs)
	if err != nil {
		return err
	}
	rows = append(rows, sim...)
	rows = append(rows, row{"Binary (static, stripped)", "—", fmt.Sprintf("%.1f MB", float64(st.Size())/1e6)})

	table := render(rows, runs, events, sessions)
	fmt.Print(table)
	if readme != "" {
		return rewrite(readme, table)
	}
	return nil
}

// measure runs bin once and returns its wall time and peak RSS (bytes),
// through the launcher built beside it (bench/launcher: a process
// started straight from the bench would inherit the bench's peak).
func measure(bin string, env []string, stdin io.Reader, args ...string) (time.Duration, int64, error) {
	return measureIn(filepath.Dir(bin), "", bin, env, stdin, args...)
}

// measureIn is measure through the launcher in the directory launchers,
// with the working directory wd ("": the bench's).
func measureIn(launchers, wd, bin string, env []string, stdin io.Reader, args ...string) (time.Duration, int64, error) {
	cmd := exec.Command(filepath.Join(launchers, "launcher"), append([]string{bin}, args...)...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, errs.Bytes())
	}
	var ns, kib int64
	if _, err := fmt.Sscan(out.String(), &ns, &kib); err != nil {
		return 0, 0, fmt.Errorf("%s %s: wall and peak RSS: %v", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return time.Duration(ns), kib * 1024, nil
}

// build builds, in dir, the runtime as shipped (static, stripped) and,
// beside it, the sandbox helper and the launcher that measures
// start-ups, and runs the runtime once so that every figure meets it in
// the page cache. It returns the runtime's path.
func build(dir string) (string, error) {
	bin := filepath.Join(dir, "agent")
	fmt.Fprintln(os.Stderr, "building", bin)
	for out, pkg := range map[string]string{bin: "./cmd/agent", filepath.Join(dir, "agent-sandbox"): "./cmd/agent-sandbox",
		filepath.Join(dir, "launcher"): "./bench/launcher"} {
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	if _, _, err := measure(bin, nil, nil, "version"); err != nil {
		return "", err
	}
	return bin, nil
}

// simRows measures `agent sim run` on the shipped scenarios, on one core
// and on all of them (medians of runs runs).
func simRows(bin string, runs int) ([]row, error) {
	var rows []row
	for _, procs := range []int{1, runtime.NumCPU()} {
		env := []string{"GOMAXPROCS=" + strconv.Itoa(procs)}
		wall, rss, err := repeat(runs, bin, env, "sim", "run")
		if err != nil {
			return nil, fmt.Errorf("sim run: %w", err)
		}
		rows = append(rows, row{fmt.Sprintf("`agent sim run`, the shipped scenarios, %d core(s): wall, peak RSS", procs),
			"≤ 100 ms, —", fmt.Sprintf("%s, %s", ms(wall), mib(rss))})
	}
	return rows, nil
}

// repeat measures n runs: the medians of the wall time and of the peak
// RSS (a run's peak depends on when its collections ran).
func repeat(n int, bin string, env []string, args ...string) (time.Duration, int64, error) {
	walls := make([]time.Duration, 0, n)
	peaks := make([]time.Duration, 0, n)
	for range n {
		w, r, err := measure(bin, env, nil, args...)
		if err != nil {
			return 0, 0, err
		}
		walls = append(walls, w)
		peaks = append(peaks, time.Duration(r))
	}
	return median(walls), int64(median(peaks)), nil
}

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

// percentile returns the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

func ms(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// vmRSS reads a process's resident set size in bytes.
func vmRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS") }

// procStatus reads a size field of /proc/<pid>/status ("VmRSS",
// "RssAnon"), in bytes.
func procStatus(pid int, field string) (int64, error) {
	return procField(fmt.Sprintf("/proc/%d/status", pid), field)
}

// procField reads a "Field: N kB" line of a /proc file, in bytes.
func procField(file, field string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

// smapsRollup reads a field of /proc/PID/smaps_rollup (kB), in bytes.
func smapsRollup(pid int, field string) (int64, error) {
	return procField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), field)
}

// metric scrapes one series (name with its labels, as exposed) from a
// Prometheus text endpoint; absent series read 0.
func metric(url, series string) (float64, error) {
	v, err := metrics(url, series)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// metrics scrapes url once and returns the sum of each series' samples.
// It asks for the text uncompressed: the bench scrapes after every turn,
// and compressing it (Go's client asks for gzip by itself) cost the
// service more than a turn's own work.
func metrics(url string, series ...string) ([]float64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	totals := make([]float64, len(series))
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		for i, s := range series {
			if name == s || strings.HasPrefix(name, s+"{") {
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", line, err)
				}
				totals[i] += v
			}
		}
	}
	return totals, nil
}

// render prints the table as markdown, with the command that made it.
func render(rows []row, runs, events, sessions int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `go run ./bench -readme README.md` on %s/%s, %d cores (%s; medians of %d runs, %d events, %d sessions).\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), runs, events, sessions)
	b.WriteString("| What | Goal | Measured |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.what, r.goal, r.got)
	}
	return b.String()
}

const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

// rewrite replaces the text between the markers of path with table.
func rewrite(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s … %s block", path, beginMarker, endMarker)
	}
	s = s[:i+len(beginMarker)] + "\n" + table + s[j:]
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// waitFor polls cond every millisecond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}
