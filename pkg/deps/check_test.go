package deps

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestCheckDrift(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := &Manifest{Skills: f.m.Skills[:2], Knowledge: f.m.Knowledge}
	tests := []struct {
		name   string
		change func(t *testing.T, home string, m *Manifest, l *Lock)
		want   []string
	}{
		{"nothing", func(*testing.T, string, *Manifest, *Lock) {}, nil},
		{"entry not in the lock", func(_ *testing.T, _ string, m *Manifest, _ *Lock) {
			m.Skills = append(m.Skills, SkillEntry{Source: "acme/new"})
		}, []string{`skill "new": not in the lockfile`}},
		{"ref changed", func(_ *testing.T, _ string, m *Manifest, _ *Lock) {
			m.Skills[0] = SkillEntry{Source: "acme/pdf@v2"}
		}, []string{`skill "pdf": the lockfile has github.com:acme/pdf@main, the manifest github.com:acme/pdf@v2`}},
		{"repository changed", func(_ *testing.T, _ string, m *Manifest, _ *Lock) {
			m.Knowledge[0].Git = "github.com:acme/handbook"
		}, []string{`knowledge "handbook": the lockfile has git.example.com:docs/handbook@main, the manifest github.com:acme/handbook@main`}},
		{"installed folder removed", func(t *testing.T, home string, _ *Manifest, _ *Lock) {
			if err := os.RemoveAll(filepath.Join(home, "skills/pdf")); err != nil {
				t.Fatal(err)
			}
		}, []string{`skill "pdf": not installed (skills/pdf does not exist)`}},
		{"installed checkout at another commit", func(_ *testing.T, _ string, _ *Manifest, l *Lock) {
			l.Knowledge["handbook"] = LockedKB{Git: "git.example.com:docs/handbook", Ref: "main", SHA: sha1}
		}, []string{`knowledge "handbook": installed commit ` + f.handbook1 + `, the lockfile has ` + sha1}},
		{"copied folder at another commit", func(_ *testing.T, _ string, _ *Manifest, l *Lock) {
			l.Skills["xlsx"] = LockedSkill{Git: "github.com:acme/skills", Ref: "main", SHA: sha2, Path: "office/xlsx"}
		}, []string{`skill "xlsx": installed commit ` + f.skills1 + `, the lockfile has ` + sha2}},
		{"copied folder without marker", func(t *testing.T, home string, _ *Manifest, _ *Lock) {
			if err := os.Remove(filepath.Join(home, "skills/xlsx/.agent-sha")); err != nil {
				t.Fatal(err)
			}
		}, []string{`skill "xlsx": installed copy has no .agent-sha marker`}},
		{"stale lock entries", func(_ *testing.T, _ string, _ *Manifest, l *Lock) {
			l.Skills["gone"] = LockedSkill{Git: "github.com:acme/gone", Ref: "main", SHA: sha1}
			l.Knowledge["old"] = LockedKB{Git: "github.com:acme/old", Ref: "main", SHA: sha1}
			l.AgentKnowledge = &LockedAgentKB{Label: "wiki", Git: "github.com:acme/wiki", Ref: "main", WikiSHA: sha1}
		}, []string{
			`skill "gone": in the lockfile but not in the manifest`,
			`knowledge "old": in the lockfile but not in the manifest`,
			`agent_knowledge "wiki": in the lockfile but not in the manifest`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := f.env.Home()
			lock, err := (&Installer{Home: home}).Install(ctx, m, nil, Normal)
			if err != nil {
				t.Fatal(err)
			}
			m := &Manifest{Skills: append([]SkillEntry(nil), m.Skills...), Knowledge: append([]KBEntry(nil), m.Knowledge...)}
			tt.change(t, home, m, lock)

			before := snapshot(t, home)
			log := &gitLog{}
			drift, err := (&Installer{Home: home, Git: log.git}).Check(ctx, m, lock)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(drift, tt.want) {
				t.Fatalf("Check() =\n%q\nwant\n%q", drift, tt.want)
			}
			if net := log.network(); len(net) != 0 {
				t.Errorf("Check() went to the network: %q", net)
			}
			if after := snapshot(t, home); !reflect.DeepEqual(before, after) {
				t.Errorf("Check() wrote to the home")
			}
		})
	}
}

func TestCheckInvalidManifest(t *testing.T) {
	_, err := (&Installer{Home: t.TempDir()}).Check(context.Background(), &Manifest{Skills: []SkillEntry{{Slug: "Bad_Slug"}}}, nil)
	if err == nil || err.Error() != `check: skills[0] "Bad_Slug": invalid slug "Bad_Slug"` {
		t.Fatalf("Check() error = %v", err)
	}
}
