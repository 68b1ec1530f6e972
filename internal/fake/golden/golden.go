package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/persona-runtime/agent/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden files with what the tests produce")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the golden file at path, byte for byte, and
// fails t with their unified diff where they differ. Under -update it
// writes got to path first (making its folder).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from what the test produced (go test -update rewrites it; review the diff):\n%s",
			path, textdiff.Unified(path, "got", string(want), string(got)))
	}
}
