package deps

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	sha1 = "1111111111111111111111111111111111111111"
	sha2 = "2222222222222222222222222222222222222222"
	sha3 = "3333333333333333333333333333333333333333"
)

// lockText is sampleLock in WriteLock's format: map keys sorted.
const lockText = `{
  "skills": {
    "pdf": {
      "git": "github.com:acme/pdf",
      "ref": "main",
      "sha": "1111111111111111111111111111111111111111"
    },
    "xlsx": {
      "git": "github.com:acme/skills",
      "ref": "v1",
      "sha": "2222222222222222222222222222222222222222",
      "path": "office/xlsx"
    }
  },
  "knowledge": {
    "handbook": {
      "git": "git.example.com:docs/handbook",
      "ref": "main",
      "sha": "3333333333333333333333333333333333333333"
    }
  },
  "agent_knowledge": {
    "label": "wiki",
    "git": "github.com:acme/wiki",
    "ref": "main",
    "wiki_sha": "1111111111111111111111111111111111111111"
  }
}
`

func sampleLock() *Lock {
	return &Lock{
		Skills: map[string]LockedSkill{
			"xlsx": {Git: "github.com:acme/skills", Ref: "v1", SHA: sha2, Path: "office/xlsx"},
			"pdf":  {Git: "github.com:acme/pdf", Ref: "main", SHA: sha1},
		},
		Knowledge:      map[string]LockedKB{"handbook": {Git: "git.example.com:docs/handbook", Ref: "main", SHA: sha3}},
		AgentKnowledge: &LockedAgentKB{Label: "wiki", Git: "github.com:acme/wiki", Ref: "main", WikiSHA: sha1},
	}
}

func TestLockRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	changed, err := WriteLock(path, sampleLock())
	if err != nil || !changed {
		t.Fatalf("WriteLock() = %v, %v; want a write", changed, err)
	}
	if got := readFile(t, dir, LockFile); got != lockText {
		t.Fatalf("lockfile:\n%s\nwant:\n%s", got, lockText)
	}
	got, err := LoadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sampleLock()) {
		t.Fatalf("LoadLock() = %+v, want %+v", got, sampleLock())
	}

	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	changed, err = WriteLock(path, got)
	if err != nil || changed {
		t.Fatalf("WriteLock(unchanged) = %v, %v; want no write", changed, err)
	}
	if st, _ := os.Stat(path); !st.ModTime().Equal(old) {
		t.Fatalf("no-op write touched the lockfile: mtime %v, want %v", st.ModTime(), old)
	}
}

func TestLockEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	l, err := LoadLock(path)
	if err != nil || len(l.Skills)+len(l.Knowledge) != 0 || l.AgentKnowledge != nil {
		t.Fatalf("LoadLock(missing) = %+v, %v; want an empty lock", l, err)
	}
	if _, err := WriteLock(path, l); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, dir, LockFile), "{\n  \"skills\": {},\n  \"knowledge\": {}\n}\n"; got != want {
		t.Fatalf("empty lock written as %q, want %q", got, want)
	}
}

func TestLoadLockInvalid(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"short sha", `{"skills": {"pdf": {"git": "github.com:a/pdf", "ref": "main", "sha": "abc"}}}`,
			`skill "pdf": invalid commit "abc"`},
		{"slug leaving skills/", `{"skills": {"../x": {"git": "github.com:a/pdf", "ref": "main", "sha": "` + sha1 + `"}}}`,
			`skill "../x": invalid slug "../x"`},
		{"folder leaving the repository", `{"skills": {"x": {"git": "github.com:a/pdf", "ref": "main", "sha": "` + sha1 + `", "path": "../y"}}}`,
			`skill "x": invalid path "../y"`},
		{"ref as option", `{"knowledge": {"kb": {"git": "github.com:a/kb", "ref": "--upload-pack=x", "sha": "` + sha1 + `"}}}`,
			`knowledge "kb": ref "--upload-pack=x" starts with -`},
		{"bad wiki sha", `{"agent_knowledge": {"label": "wiki", "git": "github.com:a/w", "ref": "main", "wiki_sha": ""}}`,
			`agent_knowledge "wiki": invalid commit ""`},
		{"unknown key", `{"skills": {}, "extra": 1}`, `unknown field "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), LockFile)
			if err := os.WriteFile(path, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadLock(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadLock() error = %v, want %q", err, tt.want)
			}
		})
	}
}
