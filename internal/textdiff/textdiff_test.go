package textdiff

import (
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added at the end", "a\n", "a\nb\n", "--- old\n+++ new\n@@ -1 +1,2 @@\n a\n+b\n"},
		{"from nothing", "", "x\n", "--- old\n+++ new\n@@ -0,0 +1 @@\n+x\n"},
		{"to nothing", "x\n", "", "--- old\n+++ new\n@@ -1 +0,0 @@\n-x\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- old\n+++ new\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
		{"close changes share a hunk", "1\n2\n3\n4\n5\n6\n", "1\nX\n3\n4\n5\nY\n",
			"--- old\n+++ new\n@@ -1,6 +1,6 @@\n 1\n-2\n+X\n 3\n 4\n 5\n-6\n+Y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("old", "new", tc.old, tc.new); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestWhole(t *testing.T) {
	old := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	new := "1\nX\n3\n4\n5\n6\n7\n8\n9\nY\n"
	want := "--- old\n+++ new\n@@ -1,10 +1,10 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n 7\n 8\n 9\n-10\n+Y\n"
	if got := Whole("old", "new", old, new); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Whole("old", "new", "a\n", "a\n"); got != "" {
		t.Errorf("equal texts: %q", got)
	}
}

// Texts too large for the table still get a true diff, without it.
func TestDiffPastTheTable(t *testing.T) {
	a := strings.Repeat("a\n", 2100)
	b := strings.Repeat("b\n", 2100)
	got := Whole("old", "new", a, b)
	if !strings.HasPrefix(got, "--- old\n+++ new\n@@ -1,2100 +1,2100 @@\n-a\n") || strings.Count(got, "\n-a") != 2100 || strings.Count(got, "\n+b") != 2100 {
		t.Fatalf("diff of %d-line texts: %.200q", 2100, got)
	}
}
