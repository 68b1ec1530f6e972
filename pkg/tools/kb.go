package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/persona-runtime/agent/pkg/deps"
)

// KBServer is the agent_kb tool server: the knowledge bases under
// AGENT_HOME/knowledge, as the manifest declares them. The KBs themselves
// are read with Read, Grep and Glob.
type KBServer struct {
	// Home is AGENT_HOME; KBs live in Home/knowledge/<label>.
	Home string
}

// KB is one knowledge base.
type KB struct {
	Label       string
	Git         string
	Writable    bool
	Description string
	Dir         string
}

// Tools returns the server's tools.
func (k *KBServer) Tools() []Tool {
	return []Tool{
		{Name: KBList, Description: "List the knowledge bases: label, git source, whether you may write it, and a description from its README.",
			Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Call: k.list},
		{Name: KBOpen, Description: "Open a knowledge base by label: returns its README (the map of the wiki); read its pages with Read, Grep and Glob.",
			Schema: json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"}},"required":["label"],"additionalProperties":false}`), Call: k.open},
	}
}

// List returns the KBs of the manifest plus any installed KB directory the
// manifest does not name, sorted by label.
func (k *KBServer) List() ([]KB, error) {
	byLabel := map[string]KB{}
	m, err := deps.LoadManifest(filepath.Join(k.Home, deps.ManifestFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if m != nil {
		for _, e := range m.Knowledge {
			byLabel[e.Label] = KB{Label: e.Label, Git: e.Git}
		}
		if a := m.AgentKnowledge; a != nil {
			byLabel[a.Label] = KB{Label: a.Label, Git: a.Git, Writable: true}
		}
	}
	if entries, err := os.ReadDir(filepath.Join(k.Home, "knowledge")); err == nil {
		for _, e := range entries {
			if _, known := byLabel[e.Name()]; e.IsDir() && !known && deps.ValidSlug(e.Name()) {
				byLabel[e.Name()] = KB{Label: e.Name()}
			}
		}
	}
	out := make([]KB, 0, len(byLabel))
	for _, kb := range byLabel {
		kb.Dir = filepath.Join(k.Home, "knowledge", kb.Label)
		kb.Description = readmeDescription(k.files(), kb.Label)
		out = append(out, kb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out, nil
}

// files is the knowledge folder, confined: a knowledge base's files are
// opened through it, so none leads out of knowledge/.
func (k *KBServer) files() Confined { return Confined{Dir: filepath.Join(k.Home, "knowledge")} }

// readme opens the README.md of the knowledge base label, following its
// symlinks only while they stay inside knowledge/.
func readme(files Confined, label string) (*os.File, error) {
	rel, err := files.Resolve(filepath.Join(label, "README.md"))
	if err != nil {
		return nil, err
	}
	f, _, err := files.Open(rel)
	return f, err
}

// readmeDescription is the first paragraph line of a knowledge base's
// README (headings stripped), or "" when there is none.
func readmeDescription(files Confined, label string) string {
	f, err := readme(files, label)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	title := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			if title == "" {
				title = strings.TrimSpace(strings.TrimLeft(line, "#"))
			}
		default:
			return clipRunes(line, 200)
		}
	}
	return title
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (k *KBServer) list(context.Context, json.RawMessage) (Result, error) {
	kbs, err := k.List()
	if err != nil {
		return Result{}, err
	}
	if len(kbs) == 0 {
		return Result{Text: "no knowledge bases installed"}, nil
	}
	var b strings.Builder
	for _, kb := range kbs {
		access := "read-only"
		if kb.Writable {
			access = "writable: raw/ notes, wiki/ pages"
		}
		git := kb.Git
		if git == "" {
			git = "local"
		}
		fmt.Fprintf(&b, "%s (%s; %s; %s): %s\n", kb.Label, git, access, kb.Dir, kb.Description)
	}
	return Result{Text: strings.TrimRight(b.String(), "\n")}, nil
}

func (k *KBServer) open(_ context.Context, input json.RawMessage) (Result, error) {
	var in struct{ Label string }
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	if !deps.ValidSlug(in.Label) {
		return Errorf("invalid label %q", in.Label), nil
	}
	dir := filepath.Join(k.Home, "knowledge", in.Label)
	files := k.files()
	f, err := readme(files, in.Label)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := files.Lstat(in.Label); derr != nil {
			return Errorf("no knowledge base %q (see %s)", in.Label, KBList), nil
		}
		return Errorf("knowledge base %q has no README.md; browse %s with Glob", in.Label, dir), nil
	}
	if err != nil {
		return Errorf("knowledge base %q cannot be opened: its README.md %s", in.Label, fsOpenReason(err)), nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSkillBytes))
	if err != nil {
		return Errorf("knowledge base %q: read README.md: %s", in.Label, fsErrText(err)), nil
	}
	return Result{Text: fmt.Sprintf("Knowledge base %s at %s\n\n%s", in.Label, dir, data)}, nil
}
