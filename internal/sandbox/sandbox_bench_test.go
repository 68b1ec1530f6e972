package sandbox

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// The price of confinement per Bash call: the helper's start (the
// runtime's binary, re-executed) and its rules, against /bin/true started
// directly.
func BenchmarkStartUnconfined(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStartConfined(b *testing.B) {
	if LandlockABI() == 0 {
		b.Skip("no Landlock")
	}
	ws := b.TempDir()
	sb, err := New(Options{Mode: ModeRequired, TempRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
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
