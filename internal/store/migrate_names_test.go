package store

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// bun names a migration by its file name's prefix before the first "_":
// two files sharing one would run as one migration (the second counted as
// applied with the first). Branches that each add "the next" migration
// meet here.
func TestMigrationNamesUnique(t *testing.T) {
	for _, dir := range []string{"migrations", "migrations/postgres"} {
		entries, err := fs.ReadDir(migrationFiles, dir)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			name, _, _ := strings.Cut(e.Name(), "_")
			if other, ok := seen[name]; ok {
				t.Errorf("%s: %s and %s share the migration name %s", dir, other, e.Name(), name)
			}
			seen[name] = path.Base(e.Name())
		}
	}
}
