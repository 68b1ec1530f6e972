package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// errInternal is the refusal of a name that resolves to an address of
// the host's own networks.
var errInternal = errors.New("resolves to a loopback, private, link-local or metadata address")

// special are the ranges a name may not resolve to unless the operator
// mapped it (AGENT_EGRESS_HOSTS), besides what netip classifies:
// shared address space (RFC 6598, where some clouds put their metadata
// service: 100.100.100.200) and the IPv6 metadata address of AWS (in
// fc00::/7, private already).
var special = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// internalAddr reports whether a is an address of the host's own
// networks (or of nobody's): loopback, private, link-local (the metadata
// service, 169.254.169.254, is), multicast, unspecified, or special.
func internalAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() || !a.IsValid() {
		return true
	}
	for _, p := range special {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// resolve is host's addresses as the proxy dials them: the operator's
// first, else the resolver's, every one of them public.
func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if addrs, ok := p.hosts[host]; ok {
		return addrs, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if internalAddr(a) {
			return nil, errInternal
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	for _, a := range addrs {
		if internalAddr(a) {
			return nil, errInternal
		}
	}
	return addrs, nil
}

// dial connects to host:port at one of the addresses resolve checked.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
