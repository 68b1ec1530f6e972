package tools

import (
	"path/filepath"
	"strings"
)

// InSkills reports whether the file tools, acting for the thread
// threadKey, would reach <Home>/skills through path p (absolute or
// relative to the workspace): by its name, or by where its symlinks lead.
// A Write or Edit there changes the skills that every thread's prompt
// lists, as write_skill does (Permission.DecideSkillChange).
func (b *Builtins) InSkills(threadKey, p string) bool {
	if strings.TrimSpace(p) == "" || strings.IndexByte(p, 0) >= 0 {
		return false // refused by the tool itself
	}
	abs := p
	if !filepath.IsAbs(abs) {
		ws, err := b.WorkspacePath(threadKey)
		if err != nil {
			return false // likewise: no workspace, no file tool
		}
		abs = filepath.Join(ws, p)
	}
	abs = filepath.Clean(abs)
	if fsInside(abs, b.skills) {
		return true
	}
	real, err := fsEvalPath(abs)
	return err == nil && fsInside(real, b.skills)
}
