package persona

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/persona-runtime/agent/pkg/fsutil"
)

//go:embed scaffold.md
var scaffold []byte

// Scaffold returns the starter SOUL.md seeded on first boot when there is
// none: every section, with comments saying what goes where. The required
// fields hold Placeholder, so the scaffold fails validation as shipped
// (Missing lists identity.name, manager.userId and mandate) and passes once
// the operator fills them in. The caller owns the returned slice.
func Scaffold() []byte {
	return append([]byte(nil), scaffold...)
}

// Seed writes the Scaffold as SOUL.md under home (created if need be) when
// there is no SOUL.md there yet; an existing file, whatever it holds, is
// left alone. It reports whether it wrote one.
func Seed(home string) (bool, error) {
	path := filepath.Join(home, "SOUL.md")
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return false, fmt.Errorf("create home: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, Scaffold(), 0o644); err != nil {
		return false, fmt.Errorf("seed SOUL.md: %w", err)
	}
	return true, nil
}
