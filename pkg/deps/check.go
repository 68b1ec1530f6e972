package deps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Check reports how the home and lock fall short of m, without network
// access and without writing anything: what `install-deps --check` prints.
// Each drift is one line naming the entry:
//
//   - the lockfile does not pin it, or pins another repository, ref or folder;
//   - it is not installed, or its installed commit (HEAD of the checkout,
//     or the .agent-sha marker of a copied folder) is not the locked one;
//   - the lockfile pins an entry the manifest no longer has.
//
// Lines come in manifest order, then stale lock entries sorted by name. An
// empty list means the lockfile covers the manifest and the home matches
// it. A missing local skill is not drift (installing cannot fix it); it is
// a warning on Progress. The error is for an invalid manifest.
func (in *Installer) Check(ctx context.Context, m *Manifest, lock *Lock) ([]string, error) {
	deps, err := m.planWith(lock)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if lock == nil {
		lock = &Lock{}
	}
	var drift []string
	pinned := map[depKind]map[string]bool{gitSkill: {}, readOnlyKB: {}, writableKB: {}}
	for _, d := range deps {
		if d.kind == localSkill {
			in.warnIfMissing(d)
			continue
		}
		pinned[d.kind][d.name] = true
		sha, gap := d.locked(lock)
		if gap != "" {
			drift = append(drift, fmt.Sprintf("%s: %s", d, gap))
			continue
		}
		cur, err := in.installed(ctx, d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			drift = append(drift, fmt.Sprintf("%s: not installed (%s does not exist)", d, filepath.ToSlash(d.dir)))
		case err != nil:
			drift = append(drift, fmt.Sprintf("%s: %v", d, err))
		case cur != sha:
			drift = append(drift, fmt.Sprintf("%s: installed commit %s, the lockfile has %s", d, cur, sha))
		}
	}
	for _, slug := range sortedKeys(lock.Skills) {
		if !pinned[gitSkill][slug] {
			drift = append(drift, fmt.Sprintf("skill %q: in the lockfile but not in the manifest", slug))
		}
	}
	for _, label := range sortedKeys(lock.Knowledge) {
		if !pinned[readOnlyKB][label] {
			drift = append(drift, fmt.Sprintf("knowledge %q: in the lockfile but not in the manifest", label))
		}
	}
	if ak := lock.AgentKnowledge; ak != nil && !pinned[writableKB][ak.Label] {
		drift = append(drift, fmt.Sprintf("agent_knowledge %q: in the lockfile but not in the manifest", ak.Label))
	}
	return drift, nil
}
