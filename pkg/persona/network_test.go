package persona

import (
	"strings"
	"testing"
)

func TestNetworkParsed(t *testing.T) {
	src := "## Network\n- github.com\n- `*.PyPI.org`\n- registry.example.com:8443 (the team's registry)\n"
	p, err := Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []NetHost{{Host: "github.com"}, {Host: "pypi.org", Subdomains: true}, {Host: "registry.example.com", Port: 8443}}
	eq(t, "network", p.Network, want)
	if !strings.Contains(p.Summary(), "network (3): github.com, *.pypi.org, registry.example.com:8443\n") {
		t.Errorf("summary does not show the allowlist:\n%s", p.Summary())
	}
	none, err := Parse("SOUL.md", []byte("## Mandate\nhelp\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(none.Summary(), "network: no host listed") {
		t.Errorf("summary without ## Network:\n%s", none.Summary())
	}
}

func TestNetHostMatches(t *testing.T) {
	for _, tc := range []struct {
		rule, host string
		port       int
		ok         bool
	}{
		{"github.com", "github.com", 443, true},
		{"github.com", "GitHub.com.", 80, true},
		{"github.com", "github.com", 22, false},
		{"github.com", "api.github.com", 443, false},
		{"github.com", "evilgithub.com", 443, false},
		{"*.pypi.org", "files.pypi.org", 443, true},
		{"*.pypi.org", "pypi.org", 443, false},
		{"*.pypi.org", "a.b.pypi.org", 443, true},
		{"*.pypi.org", "pypi.org.evil.com", 443, false},
		{"example.com:8443", "example.com", 8443, true},
		{"example.com:8443", "example.com", 443, false},
	} {
		h, err := ParseNetHost(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Matches(tc.host, tc.port); got != tc.ok {
			t.Errorf("%s matches %s:%d = %v, want %v", tc.rule, tc.host, tc.port, got, tc.ok)
		}
	}
}

// A host that does not read is an error naming its line.
func TestNetworkBadHost(t *testing.T) {
	for _, bad := range []string{"- https://github.com/x", "- git*hub.com", "- example.com:99999", "- *.*.org"} {
		_, err := Parse("SOUL.md", []byte("# P\n\n## Network\n"+bad+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "SOUL.md:4:") || !strings.Contains(err.Error(), "## Network") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
