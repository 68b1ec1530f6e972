package publish_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/deps"
)

// gitT runs git in dir and returns its trimmed output, failing the test on
// error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return fake.RunGit(t, dir, args...)
}

func writeManifest(t *testing.T, home string, m *deps.Manifest) {
	t.Helper()
	if err := deps.WriteManifest(filepath.Join(home, deps.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

func loadManifest(t *testing.T, home string) *deps.Manifest {
	t.Helper()
	m, err := deps.LoadManifest(filepath.Join(home, deps.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func loadLock(t *testing.T, home string) *deps.Lock {
	t.Helper()
	l, err := deps.LoadLock(filepath.Join(home, deps.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fileState is a file's bytes and modification time, to show a sync wrote
// nothing.
func fileState(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return fake.ReadFile(t, path) + "@" + st.ModTime().String()
}
