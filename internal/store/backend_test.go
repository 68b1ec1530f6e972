package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun/driver/pgdriver"
)

// The store suite runs on SQLite always and, when AGENT_TEST_POSTGRES_URL
// names a Postgres database (CI starts one), a second time on Postgres:
// TestMain runs the test binary again with testBackendEnv=postgres, and
// testPath hands every test a schema of its own in that database.
const (
	testPostgresEnv = "AGENT_TEST_POSTGRES_URL"
	testBackendEnv  = "AGENT_TEST_STORE_BACKEND"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 || os.Getenv(testPostgresEnv) == "" || onPostgres() {
		os.Exit(code)
	}
	fmt.Println("store: the suite again, on Postgres (" + Redact(os.Getenv(testPostgresEnv)) + ")")
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), testBackendEnv+"=postgres")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Println("store on Postgres:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// onPostgres reports whether this run of the suite is the Postgres one.
func onPostgres() bool { return os.Getenv(testBackendEnv) == "postgres" }

// sqliteOnly skips a test of SQLite's own machinery (files, pragmas,
// in-memory databases) in the Postgres run; it ran in the SQLite one.
func sqliteOnly(t testing.TB) {
	t.Helper()
	if onPostgres() {
		t.Skip("SQLite's own: ran in the SQLite run of the suite")
	}
}

var testSchemaSeq atomic.Int64

// testPath returns a database of the test's own: a SQLite path in a
// directory Open has to create, or the address of a fresh Postgres schema
// (dropped after the test).
func testPath(t testing.TB) string {
	t.Helper()
	if !onPostgres() {
		return filepath.Join(t.TempDir(), "home", "db.sqlite")
	}
	base := os.Getenv(testPostgresEnv)
	schema := fmt.Sprintf("t%d_%d", os.Getpid(), testSchemaSeq.Add(1))
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	defer admin.Close()
	if _, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() {
		admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("postgres: drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
