package deps

import "slices"

// GitHosts are the hosts of every git remote the manifest names (its
// skills from GitHub or git, its knowledge bases, the writable one), in
// order, each once: what the egress proxy allows the installs and the
// knowledge bases' own git without "## Network" listing them.
func (m *Manifest) GitHosts() []string {
	var out []string
	add := func(addr string) {
		if addr == "" {
			return
		}
		if host, _, err := splitRepo(addr); err == nil && !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	for _, e := range m.Skills {
		if s, err := e.Resolve(); err == nil {
			add(s.Repo)
		}
	}
	for _, k := range m.Knowledge {
		add(k.Git)
	}
	if m.AgentKnowledge != nil {
		add(m.AgentKnowledge.Git)
	}
	return out
}

// GitHost is the host of a git address written host:owner/repo (as
// AGENT_SKILLS_REPO is), "" when it is not one.
func GitHost(addr string) string {
	host, _, err := splitRepo(addr)
	if err != nil {
		return ""
	}
	return host
}
