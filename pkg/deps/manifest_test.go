package deps

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSkillEntryResolve(t *testing.T) {
	tests := []struct {
		name  string
		entry SkillEntry
		want  Skill
	}{
		{"source: repo name lowercased", SkillEntry{Source: "acme/PDF-Tools"},
			Skill{Slug: "pdf-tools", Repo: "github.com:acme/PDF-Tools", Ref: "main"}},
		{"source with path and ref: last path segment", SkillEntry{Source: "acme/skills/office/xlsx@v1.2"},
			Skill{Slug: "xlsx", Repo: "github.com:acme/skills", Path: "office/xlsx", Ref: "v1.2"}},
		{"source with a branch holding a slash", SkillEntry{Source: "acme/pdf@feature/x"},
			Skill{Slug: "pdf", Repo: "github.com:acme/pdf", Ref: "feature/x"}},
		{"source with an @folder", SkillEntry{Source: "acme/skills/@scope/tool"},
			Skill{Slug: "tool", Repo: "github.com:acme/skills", Path: "@scope/tool", Ref: "main"}},
		{"source repo with .git", SkillEntry{Source: "acme/pdf.git"},
			Skill{Slug: "pdf", Repo: "github.com:acme/pdf.git", Ref: "main"}},
		{"git with slug", SkillEntry{Git: "git.example.com:team/Legacy", Ref: "v2", Slug: "legacy-x"},
			Skill{Slug: "legacy-x", Repo: "git.example.com:team/Legacy", Ref: "v2"}},
		{"git without slug or ref", SkillEntry{Git: "git.example.com:team/Legacy"},
			Skill{Slug: "legacy", Repo: "git.example.com:team/Legacy", Ref: "main"}},
		{"git nested group", SkillEntry{Git: "gitlab.com:group/sub/tool.git", Ref: "main"},
			Skill{Slug: "tool", Repo: "gitlab.com:group/sub/tool.git", Ref: "main"}},
		{"local", SkillEntry{Slug: "notes"}, Skill{Slug: "notes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.entry.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Resolve() = %+v, want %+v", got, tt.want)
			}
			if got.Local() != (tt.entry.Slug != "" && tt.entry.Git == "") {
				t.Fatalf("Local() = %v", got.Local())
			}
		})
	}
}

func TestSkillEntryResolveErrors(t *testing.T) {
	tests := []struct {
		name   string
		entry  SkillEntry
		want   string
		target error
	}{
		{"local slug", SkillEntry{Slug: "Bad_Slug"}, `invalid slug "Bad_Slug"`, ErrInvalidSlug},
		{"git slug", SkillEntry{Git: "github.com:a/b", Slug: "-x"}, `invalid slug "-x"`, ErrInvalidSlug},
		{"derived slug", SkillEntry{Source: "acme/My_Skill"}, `invalid slug "my_skill"`, ErrInvalidSlug},
		{"slug too long", SkillEntry{Slug: strings.Repeat("a", 65)}, `invalid slug "aaaa`, ErrInvalidSlug},
		{"source and git", SkillEntry{Source: "a/b", Git: "github.com:a/b"}, "mixed modes are invalid", ErrMixedModes},
		{"source and ref", SkillEntry{Source: "a/b", Ref: "main"}, "mixed modes are invalid", ErrMixedModes},
		{"source and slug", SkillEntry{Source: "a/b", Slug: "b"}, "mixed modes are invalid", ErrMixedModes},
		{"ref alone", SkillEntry{Slug: "x", Ref: "main"}, "ref without git", nil},
		{"empty", SkillEntry{}, "entry needs source, git or slug", nil},
		{"source without repo", SkillEntry{Source: "acme"}, `invalid source "acme"`, nil},
		{"source with empty ref", SkillEntry{Source: "acme/pdf@"}, "empty ref", nil},
		{"source ref as option", SkillEntry{Source: "acme/pdf@-u"}, `ref "-u" starts with -`, nil},
		{"source leaving the repo", SkillEntry{Source: "acme/pdf/../../x"}, `invalid folder`, nil},
		{"source with a trailing slash", SkillEntry{Source: "acme/pdf/"}, `invalid folder`, nil},
		{"git without host", SkillEntry{Git: "acme/pdf"}, `invalid git address "acme/pdf"`, nil},
		{"git without repo", SkillEntry{Git: "github.com:acme"}, `invalid git address`, nil},
		{"git ref with a space", SkillEntry{Git: "github.com:a/b", Ref: "a b"}, `invalid ref "a b"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.entry.Resolve()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Resolve() error = %v, want %q", err, tt.want)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("error %v is not %v", err, tt.target)
			}
		})
	}
}

func TestLoadManifestErrors(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string
	}{
		{"invalid local slug", `{"skills": [{"slug": "Bad_Slug"}]}`,
			[]string{`skills[0] "Bad_Slug": invalid slug "Bad_Slug"`}},
		{"mixed modes name the entry", `{"skills": [{"slug": "ok"}, {"source": "acme/pdf", "git": "github.com:acme/pdf"}]}`,
			[]string{`skills[1] "acme/pdf": `, "mixed modes are invalid"}},
		{"two agent_knowledge", `{"agent_knowledge": [{"label": "a", "git": "github.com:a/a"}, {"label": "b", "git": "github.com:a/b"}]}`,
			[]string{"agent_knowledge: only one writable knowledge base is supported"}},
		{"duplicate slug", `{"skills": [{"source": "acme/pdf"}, {"slug": "pdf"}]}`,
			[]string{`skills[1] "pdf": duplicate slug "pdf" (also skills[0])`}},
		{"duplicate label across read-only and writable", `{"knowledge": [{"label": "kb", "git": "github.com:a/a"}], "agent_knowledge": {"label": "kb", "git": "github.com:a/b"}}`,
			[]string{`agent_knowledge: duplicate label "kb" (also knowledge[0])`}},
		{"invalid label", `{"knowledge": [{"label": "My KB", "git": "github.com:a/a"}]}`,
			[]string{`knowledge[0] "My KB": invalid label "My KB"`}},
		{"knowledge without git", `{"knowledge": [{"label": "kb"}]}`,
			[]string{`knowledge[0] "kb": invalid git address ""`}},
		{"unknown key in an entry", `{"skills": [{"sorce": "acme/pdf"}]}`,
			[]string{`skills[0]: unknown field "sorce"`}},
		{"unknown top-level key", `{"skill": []}`, []string{`unknown field "skill"`}},
		{"wrong type", `{"skills": {}}`, []string{"skills: unexpected JSON object"}},
		{"trailing data", `{} {}`, []string{"unexpected data after the JSON value"}},
		{"not JSON", `skills:`, []string{"invalid character"}},
		{"empty file", ``, []string{"empty file: want a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ManifestFile)
			if err := os.WriteFile(path, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := LoadManifest(path)
			if err == nil {
				t.Fatalf("LoadManifest() = %+v, want an error", m)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}

func TestLoadManifestMissing(t *testing.T) {
	m, err := LoadManifest(filepath.Join(t.TempDir(), ManifestFile))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error = %v, want fs.ErrNotExist", err)
	}
	if m == nil || len(m.Skills)+len(m.Knowledge) != 0 || m.AgentKnowledge != nil {
		t.Fatalf("manifest = %+v, want an empty one", m)
	}
}

// canonical is a manifest in WriteManifest's format.
const canonical = `{
  "skills": [
    {
      "source": "acme/skills/office/xlsx@v1&2"
    },
    {
      "git": "git.example.com:team/legacy",
      "ref": "main",
      "slug": "old-skill"
    },
    {
      "slug": "notes"
    }
  ],
  "knowledge": [
    {
      "label": "handbook",
      "git": "git.example.com:docs/handbook"
    }
  ],
  "agent_knowledge": {
    "label": "wiki",
    "git": "github.com:acme/wiki",
    "ref": "main"
  }
}
`

func TestWriteManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ManifestFile)
	// A compact file with the keys in another order comes out canonical.
	compact := `{"agent_knowledge":{"ref":"main","git":"github.com:acme/wiki","label":"wiki"},` +
		`"knowledge":[{"git":"git.example.com:docs/handbook","label":"handbook"}],` +
		`"skills":[{"source":"acme/skills/office/xlsx@v1&2"},{"slug":"old-skill","ref":"main","git":"git.example.com:team/legacy"},{"slug":"notes"}]}`
	if err := os.WriteFile(path, []byte(compact), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := LoadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ManifestFile); got != canonical {
		t.Fatalf("written manifest:\n%s\nwant:\n%s", got, canonical)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want the file's own 0600 kept", st.Mode())
	}

	// Load and write again: the same bytes, and the file is not touched.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	m, err = LoadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ManifestFile); got != canonical {
		t.Fatalf("second write changed the manifest:\n%s", got)
	}
	if st, _ := os.Stat(path); !st.ModTime().Equal(old) {
		t.Fatalf("no-op write touched the file: mtime %v, want %v", st.ModTime(), old)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteManifestEmptyAndInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ManifestFile)
	if err := WriteManifest(path, &Manifest{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ManifestFile); got != "{}\n" {
		t.Fatalf("empty manifest written as %q", got)
	}
	bad := &Manifest{Skills: []SkillEntry{{Slug: "Bad_Slug"}}}
	if err := WriteManifest(path, bad); err == nil || !strings.Contains(err.Error(), `invalid slug "Bad_Slug"`) {
		t.Fatalf("WriteManifest(invalid) error = %v", err)
	}
	if got := readFile(t, dir, ManifestFile); got != "{}\n" {
		t.Fatalf("an invalid manifest overwrote the file: %q", got)
	}
}

func TestRepoURL(t *testing.T) {
	tests := []struct{ addr, want, err string }{
		{"github.com:acme/skills", "https://github.com/acme/skills.git", ""},
		{"git.example.com:team/wiki.git", "https://git.example.com/team/wiki.git", ""},
		{"gitlab.com:group/sub/repo", "https://gitlab.com/group/sub/repo.git", ""},
		{"acme/skills", "", `invalid git address "acme/skills": want host:owner/repo`},
		{"github.com:acme", "", "invalid git address"},
		{"github.com:acme/../x", "", "invalid git address"},
		{"git@github.com:acme/x", "", "invalid git address"},
		{"https://github.com/acme/x", "", "invalid git address"},
		{":acme/x", "", "invalid git address"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := RepoURL(tt.addr)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("RepoURL() = %q, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("RepoURL() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
