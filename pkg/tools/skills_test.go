package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newSkillsServer(t *testing.T) (*SkillsServer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "skills")
	return &SkillsServer{Skills: NewSkills(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))}, dir
}

func call(t *testing.T, tool Tool, input any) Result {
	t.Helper()
	raw, _ := json.Marshal(input)
	res, err := tool.Call(context.Background(), raw)
	if err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
	return res
}

func toolNamed(t *testing.T, ts []Tool, name string) Tool {
	t.Helper()
	for _, tool := range ts {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return Tool{}
}

func TestSkillsWriteListReadDelete(t *testing.T) {
	s, dir := newSkillsServer(t)
	ts := s.Tools()
	res := call(t, toolNamed(t, ts, SkillsWrite), map[string]string{"slug": "deploy-checklist", "description": "Use before any deploy: the checks: in order",
		"body": "1. Check the dashboard.\n2. Ask for approval."})
	if res.IsError {
		t.Fatalf("write: %s", res.Text)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "deploy-checklist", "SKILL.md"))
	if !strings.HasPrefix(string(data), "---\nname: deploy-checklist\n") {
		t.Fatalf("SKILL.md = %q", data)
	}
	list := s.Skills.List()
	if len(list) != 1 || list[0].Description != "Use before any deploy: the checks: in order" {
		t.Fatalf("list = %+v", list)
	}
	if !strings.Contains(s.Skills.Prompt(), "deploy-checklist") {
		t.Fatalf("prompt = %q", s.Skills.Prompt())
	}
	if res := call(t, toolNamed(t, ts, SkillsRead), map[string]string{"slug": "deploy-checklist"}); !strings.Contains(res.Text, "Check the dashboard") {
		t.Fatalf("read = %+v", res)
	}
	if res := call(t, toolNamed(t, ts, SkillsDelete), map[string]string{"slug": "deploy-checklist"}); res.IsError {
		t.Fatalf("delete = %+v", res)
	}
	if len(s.Skills.List()) != 0 {
		t.Fatal("deleted skill still listed")
	}
}

func TestSkillsWriteRefusals(t *testing.T) {
	s, _ := newSkillsServer(t)
	write := toolNamed(t, s.Tools(), SkillsWrite)
	cases := []struct {
		name string
		in   map[string]string
		want string
	}{
		{"bad slug", map[string]string{"slug": "Bad_Slug", "description": "d", "body": "b"}, `invalid slug "Bad_Slug"`},
		{"traversal", map[string]string{"slug": "../x", "description": "d", "body": "b"}, "invalid slug"},
		{"name differs", map[string]string{"slug": "a", "name": "b", "description": "d", "body": "b"}, "name must equal the slug"},
		{"no description", map[string]string{"slug": "a", "body": "b"}, "description is required"},
		{"long description", map[string]string{"slug": "a", "description": strings.Repeat("x", 1025), "body": "b"}, "limit is 1024"},
		{"empty body", map[string]string{"slug": "a", "description": "d"}, "body is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, write, c.in)
			if !res.IsError || !strings.Contains(res.Text, c.want) {
				t.Fatalf("result = %+v, want an error with %q", res, c.want)
			}
		})
	}
	if res := call(t, toolNamed(t, s.Tools(), SkillsSync), map[string]string{}); !res.IsError {
		t.Fatalf("sync without a publisher = %+v", res)
	}
}

func TestSkillsDiscoveryPicksUpEditsAndSkipsBrokenOnes(t *testing.T) {
	s, dir := newSkillsServer(t)
	write := func(slug, content string) {
		t.Helper()
		p := filepath.Join(dir, slug, "SKILL.md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("alpha", "---\nname: alpha\ndescription: first version\n---\nbody\n")
	write("broken", "---\nname: [unclosed\n---\nbody\n")
	write("nofront", "just text\n")
	list := s.Skills.List()
	if len(list) != 1 || list[0].Description != "first version" {
		t.Fatalf("list = %+v (broken skills must be skipped, not fail)", list)
	}
	// An edit applies on the next discovery, without restart.
	write("alpha", "---\nname: alpha\ndescription: second version, longer\n---\nbody\n")
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(filepath.Join(dir, "alpha", "SKILL.md"), later, later)
	if list := s.Skills.List(); len(list) != 1 || list[0].Description != "second version, longer" {
		t.Fatalf("after edit: %+v", list)
	}
}

func BenchmarkSkillsDiscovery(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "skills")
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, "skill-"+string(rune('a'+i)), "SKILL.md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("---\nname: x\ndescription: a skill\n---\nbody\n"), 0o644)
	}
	s := NewSkills(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.List()
	b.ReportAllocs()
	for b.Loop() {
		s.List()
	}
}
