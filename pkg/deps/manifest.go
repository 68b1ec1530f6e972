package deps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ManifestFile and LockFile are the names of the manifest and the lockfile
// in the runtime home.
const (
	ManifestFile = "agent.json"
	LockFile     = "agent.lock"
)

// Manifest is agent.json: the skills and knowledge bases a persona installs.
type Manifest struct {
	Skills    []SkillEntry `json:"skills,omitempty"`
	Knowledge []KBEntry    `json:"knowledge,omitempty"`
	// AgentKnowledge is the single writable knowledge base, nil when none.
	AgentKnowledge *KBEntry `json:"agent_knowledge,omitempty"`
}

// SkillEntry is one skill of the manifest, in one of three mutually
// exclusive shapes:
//
//	{"source": "owner/repo[/path][@ref]"}            from GitHub
//	{"git": "host:owner/repo", "ref": "…", "slug": "…"} legacy git; slug optional
//	{"slug": "…"}                                    local: content only on the volume
//
// Fields are kept as written (no defaults filled in) so that writing a
// loaded manifest reproduces it; [SkillEntry.Resolve] gives the derived
// values.
type SkillEntry struct {
	Source string `json:"source,omitempty"`
	Git    string `json:"git,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Slug   string `json:"slug,omitempty"`
}

// KBEntry is a knowledge base: a git repository checked out as
// knowledge/<label>/. Ref defaults to [DefaultRef].
type KBEntry struct {
	Label string `json:"label"`
	Git   string `json:"git"`
	Ref   string `json:"ref,omitempty"`
}

// Skill is a validated skill entry with its derived values.
type Skill struct {
	// Slug names the installed folder skills/<slug>/.
	Slug string
	// Repo is the repository as host:owner/repo; empty for a local skill.
	Repo string
	// Path is the folder of Repo installed as the skill; empty for the
	// whole repository.
	Path string
	// Ref is the branch, tag or commit to install; empty for a local skill.
	Ref string
}

// Local reports whether the skill lives only on the volume.
func (s Skill) Local() bool { return s.Repo == "" }

// Resolve validates the entry and derives its slug, repository, folder and
// ref. Errors wrap [ErrMixedModes] or [ErrInvalidSlug] where they apply.
func (e SkillEntry) Resolve() (Skill, error) {
	switch {
	case e.Source != "" && (e.Git != "" || e.Ref != ""):
		return Skill{}, fmt.Errorf("%w: source cannot be combined with git or ref", ErrMixedModes)
	case e.Source != "" && e.Slug != "":
		return Skill{}, fmt.Errorf("%w: the slug of a source entry is derived from its address", ErrMixedModes)
	case e.Source != "":
		src, err := parseSource(e.Source)
		if err != nil {
			return Skill{}, err
		}
		slug := repoName(src.repo)
		if src.path != "" {
			slug = src.path[strings.LastIndex(src.path, "/")+1:]
		}
		return checkSlug(Skill{Slug: strings.ToLower(slug), Repo: src.repo, Path: src.path, Ref: src.ref})
	case e.Git != "":
		_, path, err := splitRepo(e.Git)
		if err != nil {
			return Skill{}, err
		}
		ref := e.Ref
		if ref == "" {
			ref = DefaultRef
		}
		if err := validRef(ref); err != nil {
			return Skill{}, err
		}
		slug := e.Slug
		if slug == "" {
			slug = strings.ToLower(repoName(path))
		}
		return checkSlug(Skill{Slug: slug, Repo: e.Git, Ref: ref})
	case e.Ref != "":
		return Skill{}, errors.New("ref without git")
	case e.Slug != "":
		return checkSlug(Skill{Slug: e.Slug})
	}
	return Skill{}, errors.New("entry needs source, git or slug")
}

func checkSlug(s Skill) (Skill, error) {
	if !ValidSlug(s.Slug) {
		return Skill{}, fmt.Errorf("%w %q", ErrInvalidSlug, s.Slug)
	}
	return s, nil
}

// name is how errors refer to an entry that has not been resolved.
func (e SkillEntry) name() string {
	for _, s := range []string{e.Source, e.Git, e.Slug} {
		if s != "" {
			return fmt.Sprintf(" %q", s)
		}
	}
	return ""
}

// RefOrDefault is the entry's ref, or [DefaultRef] when it names none.
func (k KBEntry) RefOrDefault() string {
	if k.Ref == "" {
		return DefaultRef
	}
	return k.Ref
}

func (k KBEntry) validate() error {
	if !ValidSlug(k.Label) {
		return fmt.Errorf("invalid label %q", k.Label)
	}
	if _, _, err := splitRepo(k.Git); err != nil {
		return err
	}
	return validRef(k.RefOrDefault())
}

// Validate checks every entry and that no two skills share a slug and no
// two knowledge bases (writable included) share a label. The error names
// the first bad entry by position and address.
func (m *Manifest) Validate() error {
	_, err := m.plan()
	return err
}

// LoadManifest reads and validates the manifest at path. Unknown keys are
// rejected, so a misspelt field cannot silently change what is installed.
// When the file does not exist it returns an empty manifest together with
// an error matching fs.ErrNotExist, which the caller may treat as "nothing
// to install".
func LoadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &Manifest{}, fmt.Errorf("load manifest: %w", err)
		}
		return nil, fmt.Errorf("load manifest: %w", err)
	}
	m, err := decodeManifest(data)
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func decodeManifest(data []byte) (*Manifest, error) {
	var raw struct {
		Skills         []json.RawMessage `json:"skills"`
		Knowledge      []json.RawMessage `json:"knowledge"`
		AgentKnowledge json.RawMessage   `json:"agent_knowledge"`
	}
	if err := decodeStrict(data, &raw); err != nil {
		return nil, err
	}
	m := &Manifest{}
	for i, r := range raw.Skills {
		var e SkillEntry
		if err := decodeStrict(r, &e); err != nil {
			return nil, fmt.Errorf("skills[%d]: %w", i, err)
		}
		m.Skills = append(m.Skills, e)
	}
	for i, r := range raw.Knowledge {
		var k KBEntry
		if err := decodeStrict(r, &k); err != nil {
			return nil, fmt.Errorf("knowledge[%d]: %w", i, err)
		}
		m.Knowledge = append(m.Knowledge, k)
	}
	switch ak := bytes.TrimSpace(raw.AgentKnowledge); {
	case len(ak) == 0 || string(ak) == "null":
	case ak[0] == '[':
		return nil, errors.New("agent_knowledge: only one writable knowledge base is supported: give one object, not an array")
	default:
		m.AgentKnowledge = &KBEntry{}
		if err := decodeStrict(ak, m.AgentKnowledge); err != nil {
			return nil, fmt.Errorf("agent_knowledge: %w", err)
		}
	}
	return m, nil
}

// decodeStrict decodes one JSON value, rejecting unknown keys and trailing
// data, with errors stripped of Go type names.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return errors.New("empty file: want a JSON object")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return fmt.Errorf("unexpected JSON %s", te.Value)
			}
			return fmt.Errorf("%s: unexpected JSON %s", te.Field, te.Value)
		}
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// WriteManifest validates m and writes it to path atomically in the
// canonical format: two-space indent, keys in a fixed order, empty
// sections left out, a final newline, no HTML escaping. Writing a manifest
// loaded from a canonical file reproduces it byte for byte, and a write
// that would not change the file is skipped.
func WriteManifest(path string, m *Manifest) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	data, err := encodeJSON(m)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	_, err = writeIfChanged(path, data)
	return err
}
