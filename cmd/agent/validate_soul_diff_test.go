package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diffFile is a SOUL.md of pkg/persona's diff cases.
func diffFile(name string) string {
	return filepath.Join("..", "..", "pkg", "persona", "testdata", "diff", name)
}

// validate-soul --diff prints the golden lines of each edit and exits 1
// when someone gains access, 0 when access is only lost or unchanged, and 2
// naming the file and line of a SOUL.md that does not parse.
func TestValidateSoulDiff(t *testing.T) {
	for _, c := range []struct {
		after  string
		code   int
		golden string // expected stdout, from pkg/persona's golden file
		stderr string
	}{
		{"gains.md", 1, "gains.golden", "access gained"},
		{"open_dms.md", 1, "open_dms.golden", "access gained"},
		{"losses.md", 0, "losses.golden", ""},
		{"base.md", 0, "", ""},
	} {
		t.Run(c.after, func(t *testing.T) {
			out, errs, code := runCLI(t, nil, "validate-soul", "--diff", diffFile("base.md"), diffFile(c.after))
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr: %s", code, c.code, out, errs)
			}
			want := "no change of access\n"
			if c.golden != "" {
				b, err := os.ReadFile(diffFile(c.golden))
				if err != nil {
					t.Fatal(err)
				}
				want = string(b)
			}
			if out != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
			}
			if !strings.Contains(errs, c.stderr) || (c.stderr == "" && errs != "") {
				t.Errorf("stderr %q, want %q", errs, c.stderr)
			}
		})
	}
	t.Run("unparsable", func(t *testing.T) {
		bad := diffFile("bad.md")
		for _, args := range [][]string{{bad, diffFile("base.md")}, {diffFile("base.md"), bad}} {
			out, errs, code := runCLI(t, nil, append([]string{"validate-soul", "--diff"}, args...)...)
			if code != 2 || out != "" || !strings.Contains(errs, bad+":11:") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and the file and line", args, code, out, errs)
			}
		}
		if _, errs, code := runCLI(t, nil, "validate-soul", "--diff", diffFile("base.md")); code != 2 || !strings.Contains(errs, "usage: agent validate-soul --diff OLD NEW") {
			t.Errorf("one file: exit %d, stderr %q", code, errs)
		}
		if _, errs, code := runCLI(t, nil, "validate-soul", "--diff", diffFile("base.md"), diffFile("nope.md")); code != 2 || !strings.Contains(errs, "nope.md") {
			t.Errorf("missing file: exit %d, stderr %q", code, errs)
		}
	})
}
