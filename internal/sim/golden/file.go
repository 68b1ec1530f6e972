package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/persona-runtime/agent/internal/textdiff"
	"github.com/persona-runtime/agent/pkg/fsutil"
)

// Mode is what a run does with the golden files.
type Mode int

// The modes.
const (
	Check  Mode = iota // compare; a difference fails
	Update             // rewrite
	Skip               // a live model: not deterministic
)

// Path is the golden file of a scenario file: <name>.golden beside
// <name>.yaml.
func Path(scenario string) string {
	return strings.TrimSuffix(scenario, filepath.Ext(scenario)) + ".golden"
}

// Compare compares a scenario's transcript with its golden file, or
// rewrites the file in mode Update. note says what happened: "" (it
// matched), "no golden file", "updated <name>.golden", or in mode Skip
// that nothing was compared.
func Compare(file, transcript string, mode Mode) (note string, err error) {
	if mode == Skip {
		return "golden file not compared: a live model", nil
	}
	path := Path(file)
	want, rerr := os.ReadFile(path)
	switch {
	case mode == Update:
		if rerr == nil && string(want) == transcript {
			return "", nil
		}
		if err := fsutil.WriteFileAtomic(path, []byte(transcript), 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
		return "updated " + filepath.Base(path), nil
	case os.IsNotExist(rerr):
		return "no golden file", nil
	case rerr != nil:
		return "", rerr
	}
	if string(want) == transcript {
		return "", nil
	}
	diff := textdiff.Unified(filepath.Base(path), "this run", string(want), transcript)
	return "", fmt.Errorf("transcript differs from %s (agent sim run --update rewrites it):\n%s", filepath.Base(path),
		"    "+strings.ReplaceAll(strings.TrimRight(diff, "\n"), "\n", "\n    "))
}
