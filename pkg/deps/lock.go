package deps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/persona-runtime/agent/pkg/fsutil"
)

// Lock is agent.lock: the commit each installed entry resolved to. Local
// skills have no commit and are not recorded.
type Lock struct {
	Skills    map[string]LockedSkill `json:"skills"`    // by slug
	Knowledge map[string]LockedKB    `json:"knowledge"` // by label
	// AgentKnowledge is the writable knowledge base, nil when none.
	AgentKnowledge *LockedAgentKB `json:"agent_knowledge,omitempty"`
}

// LockedSkill pins a git skill. Path is the repository folder installed,
// empty for the whole repository.
type LockedSkill struct {
	Git  string `json:"git"`
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Path string `json:"path,omitempty"`
}

// LockedKB pins a read-only knowledge base.
type LockedKB struct {
	Git string `json:"git"`
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

// LockedAgentKB records the writable knowledge base; WikiSHA is the commit
// of its checkout when install or sync last wrote the lock.
type LockedAgentKB struct {
	Label   string `json:"label"`
	Git     string `json:"git"`
	Ref     string `json:"ref"`
	WikiSHA string `json:"wiki_sha"`
}

// Clone returns a deep copy of l.
func (l *Lock) Clone() *Lock {
	c := &Lock{Skills: maps.Clone(l.Skills), Knowledge: maps.Clone(l.Knowledge)}
	if l.AgentKnowledge != nil {
		ak := *l.AgentKnowledge
		c.AgentKnowledge = &ak
	}
	return c
}

// LoadLock reads and checks the lockfile at path. A missing file is an
// empty lock, which covers nothing. Entries are checked because their
// names become directories and their commits git arguments.
func LoadLock(path string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Lock{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load lockfile: %w", err)
	}
	l := &Lock{}
	if err := decodeStrict(data, l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

func (l *Lock) validate() error {
	check := func(what, name, git, ref, sha string) error {
		if !ValidSlug(name) {
			return fmt.Errorf("%s %q: %w %q", what, name, ErrInvalidSlug, name)
		}
		if _, _, err := splitRepo(git); err != nil {
			return fmt.Errorf("%s %q: %w", what, name, err)
		}
		if err := validRef(ref); err != nil {
			return fmt.Errorf("%s %q: %w", what, name, err)
		}
		if !isFullSHA(sha) {
			return fmt.Errorf("%s %q: invalid commit %q", what, name, sha)
		}
		return nil
	}
	for _, slug := range sortedKeys(l.Skills) {
		e := l.Skills[slug]
		if err := check("skill", slug, e.Git, e.Ref, e.SHA); err != nil {
			return err
		}
		if e.Path != "" {
			if err := validSubPath(e.Path); err != nil {
				return fmt.Errorf("skill %q: invalid path %q", slug, e.Path)
			}
		}
	}
	for _, label := range sortedKeys(l.Knowledge) {
		e := l.Knowledge[label]
		if err := check("knowledge", label, e.Git, e.Ref, e.SHA); err != nil {
			return err
		}
	}
	if ak := l.AgentKnowledge; ak != nil {
		return check("agent_knowledge", ak.Label, ak.Git, ak.Ref, ak.WikiSHA)
	}
	return nil
}

// WriteLock writes l to path atomically: two-space indent, map keys
// sorted, a final newline. When the file already holds exactly these bytes
// it is left alone (not even its modification time changes) and changed is
// false.
func WriteLock(path string, l *Lock) (changed bool, err error) {
	c := l.Clone()
	if c.Skills == nil {
		c.Skills = map[string]LockedSkill{}
	}
	if c.Knowledge == nil {
		c.Knowledge = map[string]LockedKB{}
	}
	data, err := encodeJSON(c)
	if err != nil {
		return false, fmt.Errorf("write lockfile: %w", err)
	}
	return writeIfChanged(path, data)
}

// encodeJSON is the canonical encoding of the manifest and the lockfile.
// HTML escaping is off so that refs and paths with &, < or > read as
// written.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeIfChanged atomically replaces path with data unless it already
// holds data, keeping the permissions of an existing file (0644 for a new
// one).
func writeIfChanged(path string, data []byte) (bool, error) {
	perm := os.FileMode(0o644)
	if old, err := os.ReadFile(path); err == nil {
		if bytes.Equal(old, data) {
			return false, nil
		}
		if st, err := os.Stat(path); err == nil {
			perm = st.Mode().Perm()
		}
	}
	if err := fsutil.WriteFileAtomic(path, data, perm); err != nil {
		return false, err
	}
	return true, nil
}

// sortedKeys lists m's keys in order, for deterministic iteration.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
