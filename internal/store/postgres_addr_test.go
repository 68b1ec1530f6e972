package store

import (
	"context"
	"strings"
	"testing"
)

// An address the driver cannot parse is refused with an error, never a
// panic, and neither Open's nor Reachable's error shows the password.
func TestPostgresBadAddressKeepsThePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://agent:s3cr%zzet@db.invalid:5432/agent",
		"postgres://agent:s3cr/et@db.invalid:5432/agent",
		"postgres://agent:s3cret@db.invalid:5432/agent?sslmode=bogus",
	} {
		t.Run(dsn, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // nothing here should get as far as dialling
			errs := map[string]error{"reachable": Reachable(ctx, dsn)}
			_, errs["open"] = Open(ctx, dsn, Options{})
			for op, err := range errs {
				if err == nil {
					t.Fatalf("%s: no error", op)
				}
				if strings.Contains(err.Error(), "s3cr") {
					t.Fatalf("%s: the error shows the password: %v", op, err)
				}
			}
			if got := Redact(dsn); strings.Contains(got, "s3cr") {
				t.Fatalf("Redact(%q) = %q", dsn, got)
			}
		})
	}
}
