package persona

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// NetHost is one host of "## Network": what the agent's commands may
// reach through the egress proxy.
type NetHost struct {
	// Host is the name, lower case, without a leading "*.".
	Host string `json:"host"`
	// Subdomains is set by a leading "*." (`*.pypi.org`): it matches the
	// subdomains of Host only, not Host itself.
	Subdomains bool `json:"subdomains,omitempty"`
	// Port is the one port allowed; 0 means 443 and 80.
	Port int `json:"port,omitempty"`
}

// String is the host as written in SOUL.md: `github.com`, `*.pypi.org`,
// `registry.example.com:8443`.
func (h NetHost) String() string {
	s := h.Host
	if h.Subdomains {
		s = "*." + s
	}
	if h.Port != 0 {
		s += ":" + strconv.Itoa(h.Port)
	}
	return s
}

// Matches reports whether a request to host:port is allowed by h. host
// is compared case-insensitively, without a trailing dot.
func (h NetHost) Matches(host string, port int) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case h.Port != 0 && port != h.Port:
		return false
	case h.Port == 0 && port != 443 && port != 80:
		return false
	case h.Subdomains:
		return strings.HasSuffix(host, "."+h.Host)
	default:
		return host == h.Host
	}
}

// ParseNetHost reads one host of "## Network" (or of a git remote the
// runtime allows implicitly).
func ParseNetHost(s string) (NetHost, error) {
	s = strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "`"))
	var h NetHost
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		h.Subdomains, s = true, rest
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return NetHost{}, fmt.Errorf("bad port %q", port)
		}
		h.Port, s = n, host
	}
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if !validHostName(s) {
		return NetHost{}, fmt.Errorf("%q is not a host name (want `github.com`, `*.pypi.org` or `host:port`)", s)
	}
	h.Host = s
	return h, nil
}

// validHostName accepts DNS names and IP addresses, no wildcards inside.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	if net.ParseIP(s) != nil {
		return true
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// network reads "## Network": one host per bullet. A line that is not a
// host is an error naming it: an allowlist read wrong would refuse, or
// allow, what its author did not mean.
func (ps *parser) network(s section) error {
	for _, it := range items(s.body, false) {
		text := it.text
		if c, _, ok := strings.Cut(text, " "); ok && it.bullet {
			text = c // "- github.com (the sources)": the host is the first word
		}
		if !it.bullet {
			ps.warn(it.line, "line in \"## Network\" ignored: hosts are bullets, one host each")
			continue
		}
		h, err := ParseNetHost(text)
		if err != nil {
			return ps.fail(it.line, "\"## Network\": %v", err)
		}
		ps.p.Network = append(ps.p.Network, h)
	}
	return nil
}

// networkSummary is the allowlist's line of Summary.
func networkSummary(hosts []NetHost) string {
	if len(hosts) == 0 {
		return "network: no host listed (under AGENT_SANDBOX_NET=allowlist, commands reach only the git remotes of the knowledge bases and the manifest)"
	}
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		parts[i] = h.String()
	}
	return fmt.Sprintf("network (%d): %s", len(hosts), strings.Join(parts, ", "))
}
