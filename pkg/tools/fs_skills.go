package tools

import (
	"path/filepath"
	"strings"
)

// The folders every conversation of the persona reads, as Shared names
// them.
const (
	SharedSkills    = "skills"
	SharedKnowledge = "knowledge"
)

// InSkills reports whether the file tools, acting for the thread
// threadKey, would reach <Home>/skills through path p (absolute or
// relative to the workspace): by its name, or by where its symlinks lead.
// A Write or Edit there changes the skills that every thread's prompt
// lists, as write_skill does (Permission.DecideSkillChange).
func (b *Builtins) InSkills(threadKey, p string) bool {
	folder, _ := b.Shared(threadKey, p)
	return folder == SharedSkills
}

// Shared reports which of the folders every conversation reads the file
// tools, acting for the thread threadKey, would reach through path p
// (absolute or relative to the workspace), by its name or by where its
// symlinks lead: folder is SharedSkills or SharedKnowledge ("" for
// neither) and rel the path from AGENT_HOME ("skills/x/SKILL.md"), where
// its symlinks lead when they lead there.
func (b *Builtins) Shared(threadKey, p string) (folder, rel string) {
	if strings.TrimSpace(p) == "" || strings.IndexByte(p, 0) >= 0 {
		return "", "" // refused by the tool itself
	}
	abs := p
	if !filepath.IsAbs(abs) {
		ws, err := b.WorkspacePath(threadKey)
		if err != nil {
			return "", "" // likewise: no workspace, no file tool
		}
		abs = filepath.Join(ws, p)
	}
	abs = filepath.Clean(abs)
	// Where the symlinks lead first: that is the file written.
	if real, err := fsEvalPath(abs); err == nil {
		if folder, rel := b.sharedFolder(real); folder != "" {
			return folder, rel
		}
	}
	return b.sharedFolder(abs)
}

// sharedFolder is Shared of an absolute, clean path, by its name.
func (b *Builtins) sharedFolder(abs string) (folder, rel string) {
	for _, f := range []struct{ name, dir string }{{SharedSkills, b.skills}, {SharedKnowledge, b.knowledge}} {
		if fsInside(abs, f.dir) {
			r, err := filepath.Rel(f.dir, abs)
			if err != nil || r == "." {
				return f.name, f.name
			}
			return f.name, filepath.Join(f.name, r)
		}
	}
	return "", ""
}
