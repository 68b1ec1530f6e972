package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/store"
)

// `agent memory` lists every memory (a table, or --json), exports them as
// markdown (one file per conversation and persona.md) and forgets one, in
// the index too; a wrong use is a usage line and exit 2.
func TestMemoryCLI(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"AGENT_HOME": home, "HOME": home}
	st, err := store.Open(t.Context(), filepath.Join(home, "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 2, 10, 4, 0, 0, time.UTC)
	var ms []memory.Memory
	for i, m := range []memory.Memory{
		{Text: "we deploy on Tuesdays", Author: "U0MGR", Channel: "D0MGR", ThreadTS: "1.1", Scope: memory.ScopeConversation},
		{Text: "Morgan owns releases", Author: "U0MGR", Channel: "D0MGR", ThreadTS: "1.1", Scope: memory.ScopePersona},
		{Text: "standup is\nat ten", Author: "U0ALICE", Channel: "C0TEAM", ThreadTS: "2.1", Scope: memory.ScopeConversation},
	} {
		m.CreatedAt = at.Add(time.Duration(i) * time.Minute)
		m, err := st.AddMemory(t.Context(), m)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runCLI(t, env, "memory")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("agent memory: exit %d %q %q", code, out, errOut)
	}
	for i, m := range ms {
		for _, want := range []string{m.ID, m.CreatedAt.Local().Format(time.DateTime), m.Scope, m.Channel, m.Author, strings.Fields(m.Text)[0]} {
			if !strings.Contains(lines[i+1], want) {
				t.Errorf("line %d %q lacks %q", i+1, lines[i+1], want)
			}
		}
	}
	if !strings.Contains(lines[3], "standup is at ten") {
		t.Errorf("a memory's lines are not one: %q", lines[3])
	}

	out, _, code = runCLI(t, env, "memory", "list", "--json")
	var recs []memoryRecord
	for line := range strings.Lines(out) {
		var r memoryRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("agent memory list --json: %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	if code != 0 || len(recs) != 3 {
		t.Fatalf("agent memory list --json (one object a line): exit %d %q", code, out)
	}
	if r := recs[1]; r.ID != ms[1].ID || r.Scope != "persona" || r.Channel != "D0MGR" || r.ThreadTS != "1.1" ||
		r.Author != "U0MGR" || r.Text != "Morgan owns releases" || !r.CreatedAt.Equal(ms[1].CreatedAt) {
		t.Errorf("record %+v, want %+v", r, ms[1])
	}

	dir := filepath.Join(home, "kb", "memories")
	out, _, code = runCLI(t, env, "memory", "export", "--dir", dir)
	want := strings.Join([]string{filepath.Join(dir, "D0MGR.md"), filepath.Join(dir, "persona.md"), filepath.Join(dir, "C0TEAM.md")}, "\n") + "\n"
	if code != 0 || out != want {
		t.Fatalf("agent memory export: exit %d %q, want %q", code, out, want)
	}
	if got := fake.ReadFile(t, filepath.Join(dir, "persona.md")); got != "# Persona-wide memories\n\n- Morgan owns releases\n"+
		"  <!-- id "+ms[1].ID+"; 2026-03-02 10:05 UTC; by U0MGR; thread D0MGR/1.1 -->\n" {
		t.Errorf("persona.md:\n%s", got)
	}

	out, _, code = runCLI(t, env, "memory", "forget", ms[0].ID)
	if code != 0 || out != "forgot memory "+ms[0].ID+"\n" {
		t.Fatalf("agent memory forget: exit %d %q", code, out)
	}
	_, errOut, code = runCLI(t, env, "memory", "forget", ms[0].ID)
	if code == 0 || !strings.Contains(errOut, "not found") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("forget again: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{{"memory", "forget"}, {"memory", "list", "x"}, {"memory", "drop"}} {
		if _, errOut, code := runCLI(t, env, args...); code != 2 || !strings.Contains(errOut, "usage: agent memory [list|export|forget <id>]") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}

	// Forgotten, it is gone from the list and from recall.
	st, err = store.Open(t.Context(), filepath.Join(home, "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Memory(t.Context(), ms[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("forgotten memory: %v", err)
	}
	rs, err := st.Recall(t.Context(), memory.RecallQuery{Text: "deploy Tuesdays", Channel: "D0MGR"})
	if err != nil || len(rs) != 0 {
		t.Errorf("recall after forget: %+v, %v", rs, err)
	}
}
