// Package egress is the runtime's egress proxy: the only way out of the
// network of its own that every sandboxed command gets under
// AGENT_SANDBOX_NET=allowlist (internal/sandbox relays each connection a
// command makes to its proxy address here, with the call's context).
//
// It is a small HTTP proxy built on net/http: plain requests are
// forwarded by httputil.ReverseProxy, HTTPS is a CONNECT tunnel whose
// bytes it copies without seeing inside the TLS. A request is allowed
// only to a host of SOUL.md "## Network", a git remote the persona's own
// configuration names, or a host an approval card of category network
// allowed in the thread (stored: a restart keeps it). In ask mode a
// request for another host holds its connection while the card asks;
// elsewhere it is refused at once, with the pinned 403 body, one log
// line with the host and the thread, and agent_egress_requests_total
// {outcome="refused"}.
//
// Resolution is the proxy's: AGENT_EGRESS_HOSTS first, then DNS. A name
// that resolves to a loopback, private, link-local, shared (CGNAT) or
// cloud-metadata address is refused unless AGENT_EGRESS_HOSTS put that
// address there, and the proxy dials the very address it checked, so no
// DNS answer changed between the check and the dial (rebinding) reaches
// the host's own services.
package egress
