package sandbox

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The price of confinement per Bash call: the helper's start (the
// runtime's binary, re-executed) and its rules, against /bin/true started
// directly.
func BenchmarkStartUnconfined(b *testing.B) {
	start := childCPU()
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// childCPU is the CPU time (user and system) of this process's waited-for
// children: the helpers and the commands. Wall time on a loaded shared
// machine mostly measures the others; this does not.
func childCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(childCPU()-start)/float64(time.Millisecond)/float64(b.N), "child-cpu-ms/op")
}

func BenchmarkStartConfined(b *testing.B) { benchStart(b, NetAllow) }

// BenchmarkStartAllowlist is the same under AGENT_SANDBOX_NET=allowlist:
// the user and network namespaces, the loopback brought up, the proxy
// address's listener handed over, the relay socket.
func BenchmarkStartAllowlist(b *testing.B) { benchStart(b, NetAllowlist) }

func benchStart(b *testing.B, net Net) {
	if LandlockABI() == 0 {
		b.Skip("no Landlock")
	}
	ws := b.TempDir()
	sb, err := New(Options{Mode: ModeRequired, Net: net, TempRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if net == NetAllowlist && !sb.netns {
		b.Skip("no namespaces")
	}
	start := childCPU()
	defer func() { reportCPU(b, start) }()
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cleanup, err := sb.Command(context.Background(), cmd, ws, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		cleanup()
	}
}
