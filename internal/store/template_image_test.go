package store

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
)

var updateTemplate = flag.Bool("update-template", false, "write the pre-migrated template (go generate ./internal/store)")

// TestTemplateImage fails when the embedded pre-migrated template was made
// from other migrations than the embedded ones; with -update-template (go
// generate ./internal/store) it makes it again.
func TestTemplateImage(t *testing.T) {
	if *updateTemplate {
		if err := writeTemplateImage(context.Background(), "template"); err != nil {
			t.Fatal(err)
		}
		return
	}
	sum, err := migrationsDigest()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(templateImageSum); got != sum {
		t.Fatalf("internal/store/template/ was made from other migrations (digest %s, the embedded ones' %s): run `go generate ./internal/store` and commit internal/store/template/", got, sum)
	}
}

// TestTemplateImageIsMigrations checks that the pre-migrated template
// holds what running the migrations produces: the same page size, schema
// (every table, index, trigger and view, by its SQL), recorded migrations
// and rows.
func TestTemplateImageIsMigrations(t *testing.T) {
	ctx := context.Background()
	img, err := templateFromImage(ctx)
	if err != nil {
		t.Fatalf("templateFromImage: %v (a stale image: run `go generate ./internal/store`)", err)
	}
	defer img.Close()
	mig, err := open(ctx, InMemory, Options{}, embeddedMigrations())
	if err != nil {
		t.Fatal(err)
	}
	defer mig.Close()
	want, got := dumpDatabase(t, mig.db.DB), dumpDatabase(t, img.db.DB)
	if len(want) < 10 {
		t.Fatalf("the migrated database's dump is short: %q", want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the pre-migrated template differs from the migrations' result (run `go generate ./internal/store`):\n got %q\nwant %q", got, want)
	}
}

// TestTemplateCopiesMigrated checks that an in-memory store, a copy of the
// template, opens with every migration recorded and takes writes.
func TestTemplateCopiesMigrated(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, InMemory, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := readMigrations(embeddedMigrations())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM "+migrationsTable).Scan(&n); err != nil || n != len(ms) {
		t.Fatalf("recorded migrations = %d, %v; want %d", n, err, len(ms))
	}
}

// dumpDatabase lists a database's page size, schema and rows, one string
// each, in a stable order; the migrations' times are left out.
func dumpDatabase(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var out []string
	query := func(q string, each func(cols []string, vals []any)) {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			each(cols, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	query("PRAGMA page_size", func(_ []string, v []any) { out = append(out, fmt.Sprintf("page_size %v", v[0])) })
	query("PRAGMA user_version", func(_ []string, v []any) { out = append(out, fmt.Sprintf("user_version %v", v[0])) })
	var tables []string
	query("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema ORDER BY type, name", func(_ []string, v []any) {
		out = append(out, fmt.Sprintf("%v %v on %v: %s", v[0], v[1], v[2], v[3]))
		if v[0] == "table" && !strings.HasPrefix(fmt.Sprint(v[1]), "sqlite_") {
			tables = append(tables, fmt.Sprint(v[1]))
		}
	})
	for _, tbl := range tables {
		query(`SELECT * FROM "`+tbl+`" ORDER BY 1`, func(cols []string, v []any) {
			var row []string
			for i, c := range cols {
				if tbl == migrationsTable && c == "migrated_at" {
					continue
				}
				row = append(row, fmt.Sprintf("%s=%v", c, v[i]))
			}
			out = append(out, tbl+": "+strings.Join(row, " "))
		})
	}
	return out
}
