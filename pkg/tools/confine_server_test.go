package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// A folder that holds a denied path is never granted: the files named in
// it are, alone.
func TestServerReadable(t *testing.T) {
	root := t.TempDir()
	data, lib, secretDir := filepath.Join(root, "data"), filepath.Join(root, "lib"), filepath.Join(root, "home")
	for _, d := range []string{data, lib, filepath.Join(secretDir, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(data, "server.js"), filepath.Join(data, "bin"), filepath.Join(lib, "mod.js"), filepath.Join(lib, "tool")} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(data, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	deny := []string{filepath.Join(data, ".env"), filepath.Join(secretDir, "sub", "db.sqlite")}
	for _, tc := range []struct {
		name            string
		argv            []string
		grant, withheld []string
	}{
		{"script beside the secrets", []string{"/usr/bin/env", filepath.Join(data, "server.js")},
			[]string{"/usr/bin", filepath.Join(data, "server.js")}, nil},
		{"script through a symlink", []string{"/usr/bin/env", filepath.Join(root, "link", "server.js")},
			[]string{"/usr/bin", filepath.Join(root, "link", "server.js")}, nil},
		{"program beside the secrets", []string{filepath.Join(data, "bin")}, []string{filepath.Join(data, "bin")}, nil},
		{"program and script elsewhere", []string{filepath.Join(lib, "tool"), filepath.Join(lib, "mod.js")}, []string{lib, lib}, nil},
		{"a folder holding a secret below", []string{"/usr/bin/env", secretDir, lib}, []string{"/usr/bin", lib}, []string{secretDir}},
		{"missing and relative paths", []string{"/usr/bin/env", "rel.js", filepath.Join(root, "none.js")}, []string{"/usr/bin"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.argv[0], tc.argv[1:]...)
			cmd.Path = tc.argv[0]
			grant, withheld := serverReadable(cmd, deny)
			if !slices.Equal(grant, tc.grant) || !slices.Equal(withheld, tc.withheld) {
				t.Fatalf("grant %q withheld %q, want %q and %q", grant, withheld, tc.grant, tc.withheld)
			}
		})
	}
}
