package secret

import (
	"strings"
	"testing"
)

// A password never survives masking, whether the address parses or not,
// and CheckURL explains a bad address without quoting any of it.
func TestMaskURL(t *testing.T) {
	for _, tc := range []struct {
		addr, want, password string
		bad                  bool
	}{
		{"postgres://agent:pg-pass@db:5432/agent", "postgres://agent:xxxxx@db:5432/agent", "pg-pass", false},
		{"postgres://agent:s3cr%zzet-pass@db.example:5432/agent", "postgres://agent:xxxxx@db.example:5432/agent", "s3cr%zzet-pass", true},
		{"postgres://agent:pa/ss-word@db/agent", "postgres://agent:xxxxx@db/agent", "pa/ss-word", true},
		{"postgres://agent:pa#ss-word@db/agent", "postgres://agent:xxxxx@db/agent", "pa#ss-word", true},
		{"postgres://agent:p@ss-word@db/agent", "postgres://agent:xxxxx@db/agent", "p@ss-word", false},
		{"postgres://agent:1234?x-word@db/agent", "postgres://agent:xxxxx@db/agent", "1234?x-word", false},
		{"postgres://db/agent?sslmode=disable&password=q%zzword", "postgres://db/agent?sslmode=disable&password=xxxxx", "q%zzword", false},
		{"postgres://agent@db/agent", "postgres://agent@db/agent", "", false},
		{"postgres://db:5432/agent", "postgres://db:5432/agent", "", false},
	} {
		got := MaskURL(tc.addr)
		if got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.addr, got, tc.want)
		}
		err := CheckURL(tc.addr)
		if (err != nil) != tc.bad {
			t.Errorf("CheckURL(%q) = %v, want bad=%v", tc.addr, err, tc.bad)
		}
		if tc.password == "" {
			if p := URLPasswords(tc.addr); len(p) != 0 {
				t.Errorf("URLPasswords(%q) = %q", tc.addr, p)
			}
			continue
		}
		if err != nil && (strings.Contains(err.Error(), tc.password) || strings.Contains(err.Error(), "%zz")) {
			t.Errorf("CheckURL(%q) quotes the password: %v", tc.addr, err)
		}
		found := false
		for _, p := range URLPasswords(tc.addr) {
			found = found || p == tc.password
		}
		if !found {
			t.Errorf("URLPasswords(%q) = %q, want %q among them", tc.addr, URLPasswords(tc.addr), tc.password)
		}
	}
}
