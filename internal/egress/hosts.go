package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseHosts reads AGENT_EGRESS_HOSTS: a comma list of name=address, read
// before DNS as /etc/hosts would be. A name may be given more than once
// (several addresses). The error names the variable and the entry.
func ParseHosts(s string) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, addr, ok := strings.Cut(entry, "=")
		name = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
		if !ok || name == "" {
			return nil, fmt.Errorf("AGENT_EGRESS_HOSTS: %q is not name=address", entry)
		}
		a, err := netip.ParseAddr(strings.TrimSpace(addr))
		if err != nil {
			return nil, fmt.Errorf("AGENT_EGRESS_HOSTS: %q: %q is not an IP address", entry, strings.TrimSpace(addr))
		}
		out[name] = append(out[name], a.Unmap())
	}
	return out, nil
}
