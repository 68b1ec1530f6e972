package persona

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseDiffFile(t *testing.T, name string) *Persona {
	t.Helper()
	path := filepath.Join("testdata", "diff", name+".md")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(path, src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each edit of base.md has its golden diff: the lines a reviewer reads,
// "+" for access gained and "-" for access lost, and Gains says whether a
// review is due.
func TestDiffGolden(t *testing.T) {
	base := parseDiffFile(t, "base")
	for _, c := range []struct {
		name  string
		gains bool
	}{{"gains", true}, {"losses", false}, {"open_dms", true}, {"base", false}} {
		t.Run(c.name, func(t *testing.T) {
			changes := Diff(base, parseDiffFile(t, c.name))
			var b strings.Builder
			for _, ch := range changes {
				b.WriteString(ch.String() + "\n")
			}
			checkGolden(t, filepath.Join("diff", c.name+".golden"), b.String())
			if Gains(changes) != c.gains {
				t.Errorf("Gains = %v, want %v:\n%s", !c.gains, c.gains, b.String())
			}
		})
	}
}

// The reverse of a gain is a loss: every line of gains.md's diff comes
// back with the other sign when the edit is undone.
func TestDiffReversed(t *testing.T) {
	base, gains := parseDiffFile(t, "base"), parseDiffFile(t, "gains")
	forward, back := Diff(base, gains), Diff(gains, base)
	if len(forward) != len(back) {
		t.Fatalf("%d lines forward, %d back:\n%v\n%v", len(forward), len(back), forward, back)
	}
	var gainsBack int
	for _, c := range back {
		if c.Gain {
			gainsBack++
		}
	}
	var lossesForward int
	for _, c := range forward {
		if !c.Gain {
			lossesForward++
		}
	}
	if gainsBack != lossesForward {
		t.Errorf("undoing the edit gains %d lines, the edit lost %d:\n%v\n%v", gainsBack, lossesForward, forward, back)
	}
}
