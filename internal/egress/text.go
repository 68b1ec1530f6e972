package egress

// The texts people read (interfaces.md, "Network").

// RefusalBody is the body of the proxy's 403 for host.
func RefusalBody(host string) string {
	return "blocked by the persona's network allowlist: " + host
}

// CardSummary is the question of the network card for host.
func CardSummary(host string) string {
	return "Allow " + host + " for this thread?"
}

// Category is the approval category of the network card; an approver
// with the scope network (or anything) may decide it.
const Category = "network"
