package textdiff

import "testing"

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
