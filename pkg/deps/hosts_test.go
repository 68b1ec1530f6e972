package deps

import (
	"slices"
	"testing"
)

// The hosts of every git remote the manifest names, each once.
func TestGitHosts(t *testing.T) {
	m := &Manifest{
		Skills:         []SkillEntry{{Source: "acme/skills/review"}, {Git: "git.example.com:team/tools"}, {Slug: "local"}},
		Knowledge:      []KBEntry{{Label: "docs", Git: "github.com:acme/docs"}, {Label: "wiki", Git: "gitlab.example.org:acme/wiki"}},
		AgentKnowledge: &KBEntry{Label: "notes", Git: "git.example.com:team/notes"},
	}
	want := []string{"github.com", "git.example.com", "gitlab.example.org"}
	if got := m.GitHosts(); !slices.Equal(got, want) {
		t.Fatalf("GitHosts = %q, want %q", got, want)
	}
	if GitHost("github.com:acme/skills") != "github.com" || GitHost("not an address") != "" {
		t.Fatal("GitHost")
	}
}
