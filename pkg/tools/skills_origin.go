package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/fsutil"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A skill's description reaches the system prompt of every thread, so the
// prompt says who wrote it. write_skill records its author beside the
// skills (Skills.Records), with the digest of the SKILL.md it wrote: the
// record names the author only while the file is still what they wrote.
// A skill the manifest installs says its source; any other is "on the
// volume", author unknown.

// skillRecord is the runtime's record of one write_skill.
type skillRecord struct {
	Author  string    `json:"author,omitempty"` // user id; empty without a chat turn
	Role    string    `json:"role,omitempty"`   // the author's envelope role then
	Channel string    `json:"channel,omitempty"`
	Thread  string    `json:"thread,omitempty"` // the thread's root ts
	SHA256  string    `json:"sha256"`           // of the SKILL.md written
	Written time.Time `json:"written"`
}

// recordEntry caches a skill's record by the record file's stat.
type recordEntry struct {
	known  bool
	exists bool
	mod    time.Time
	size   int64
	rec    *skillRecord // nil: none, or unreadable
}

// manifestEntry caches the manifest's installed skills (slug → "installed
// from …") by the manifest's stat.
type manifestEntry struct {
	known     bool
	exists    bool
	mod       time.Time
	size      int64
	installed map[string]string
}

func skillSum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// readRecord returns the record of slug, read again only when its file
// changed since prev.
func (s *Skills) readRecord(slug string, prev recordEntry) recordEntry {
	if s.Records == "" {
		return recordEntry{}
	}
	path := filepath.Join(s.Records, slug+".json")
	st, err := os.Stat(path)
	e := recordEntry{known: true, exists: err == nil}
	if err == nil {
		e.mod, e.size = st.ModTime(), st.Size()
	}
	if prev.known && prev.exists == e.exists && prev.mod.Equal(e.mod) && prev.size == e.size {
		return prev
	}
	if !e.exists {
		return e
	}
	data, err := os.ReadFile(path)
	var rec skillRecord
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		s.Log.Warn("skill's author record unreadable", "path", path, "err", err)
		return e
	}
	e.rec = &rec
	return e
}

// installedLocked returns the skills the manifest installs from a source
// (slug → "installed from …"), read again only when the manifest changed.
// s.mu is held.
func (s *Skills) installedLocked() map[string]string {
	if s.Manifest == "" {
		return nil
	}
	st, err := os.Stat(s.Manifest)
	m := manifestEntry{known: true, exists: err == nil}
	if err == nil {
		m.mod, m.size = st.ModTime(), st.Size()
	}
	prev := s.manifest
	if prev.known && prev.exists == m.exists && prev.mod.Equal(m.mod) && prev.size == m.size {
		return prev.installed
	}
	if m.exists {
		man, err := deps.LoadManifest(s.Manifest)
		if err != nil {
			s.Log.Warn("skills' origins: manifest unreadable", "path", s.Manifest, "err", err)
		} else {
			m.installed = map[string]string{}
			for _, e := range man.Skills {
				sk, err := e.Resolve()
				switch {
				case err != nil || sk.Local():
				case e.Source != "":
					m.installed[sk.Slug] = "installed from " + e.Source
				default:
					m.installed[sk.Slug] = "installed from git " + sk.Repo + "@" + sk.Ref
				}
			}
		}
	}
	s.manifest = m
	return m.installed
}

// skillOrigin is who wrote a skill and where it came from: the record
// when the file is still what it recorded, else the manifest's source,
// else the record of an earlier version, else nothing.
func skillOrigin(rec *skillRecord, sum, installed string) (id, role, origin string) {
	where := func(r *skillRecord) string {
		if r.Channel == "" {
			return ""
		}
		return " in <#" + r.Channel + "> thread " + r.Thread
	}
	switch {
	case rec != nil && rec.SHA256 == sum && rec.Author != "":
		return rec.Author, rec.Role, "written with write_skill by <@" + rec.Author + "> (" + rec.Role + ")" + where(rec)
	case rec != nil && rec.SHA256 == sum:
		return "", "", "written with write_skill outside a chat turn; author not recorded"
	case installed != "":
		return "", "", installed
	case rec != nil && rec.Author != "":
		return "", "", "changed on the volume after <@" + rec.Author + "> (" + rec.Role + ") wrote it with write_skill" +
			where(rec) + "; who changed it is not recorded"
	}
	return "", "", "on the volume, neither written with write_skill nor installed by the manifest; author not recorded"
}

// record notes that the turn in ctx wrote content as slug's SKILL.md.
func (s *Skills) record(ctx context.Context, slug string, content []byte) error {
	if s.Records == "" {
		return nil
	}
	rec := skillRecord{SHA256: skillSum(content), Written: time.Now().UTC()}
	if t, ok := TurnFromContext(ctx); ok && t.Event != nil {
		rec.Author = t.Event.UserID
		rec.Role = pipeline.EnvelopeRole(string(t.Access.Role))
		if t.Event.BotID != "" {
			rec.Role = pipeline.EnvelopeBot
		}
		rec.Channel, rec.Thread = t.Event.ChannelID, t.Event.RootTS()
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Records, 0o755); err != nil {
		return fmt.Errorf("record the author: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(s.Records, slug+".json"), data, 0o644); err != nil {
		return fmt.Errorf("record the author: %w", err)
	}
	return nil
}

// forget removes the record of a deleted skill.
func (s *Skills) forget(slug string) error {
	if s.Records == "" {
		return nil
	}
	err := os.Remove(filepath.Join(s.Records, slug+".json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget the author: %w", err)
	}
	return nil
}
