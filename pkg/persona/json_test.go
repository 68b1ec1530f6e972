package persona

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
)

// roundTrip marshals p, unmarshals and prepares the result, and checks that
// it is the same persona: same JSON, prompt, summary and access answers.
func roundTrip(t *testing.T, p *Persona) {
	t.Helper()
	data := mustJSON(t, p)
	var q Persona
	if err := json.Unmarshal(data, &q); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if err := q.Prepare(); err != nil {
		t.Fatalf("Prepare after unmarshal: %v", err)
	}
	if again := mustJSON(t, &q); !bytes.Equal(again, data) {
		t.Fatalf("JSON changed in a round trip:\n%s\n%s", data, again)
	}
	if p.Prompt() != q.Prompt() || p.Summary() != q.Summary() {
		t.Fatal("prompt or summary changed in a round trip")
	}
	res, err := q.Compile()
	if err != nil || len(res) != len(p.Redactions) {
		t.Fatalf("Compile after a round trip = %d patterns, %v", len(res), err)
	}
	sameAccess(t, p, &q)
}

func TestJSONRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := Parse(f, readTestdata(t, filepath.Base(f)))
			if err != nil {
				t.Skip("does not parse:", err)
			}
			roundTrip(t, p)
		})
	}
}

func TestJSONFieldNames(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal(mustJSON(t, mustParseFile(t, "full.md")), &m); err != nil {
		t.Fatal(err)
	}
	// The spec names the fields identity.name, manager.userId,
	// backupManager.userId and approvalTimeoutSeconds.
	id := m["identity"].(map[string]any)
	mgr := m["manager"].(map[string]any)
	bk := m["backupManager"].(map[string]any)
	if id["name"] != "Ada" || mgr["userId"] != "U024BE7LH" || bk["userId"] != "U024BE7LJ" || m["approvalTimeoutSeconds"] != 600.0 {
		t.Fatalf("unexpected JSON field names: %v", m)
	}
}

// TestPrepareRejectsBadCache checks that a tampered cache entry with an
// invalid pattern fails to load rather than loading without redaction.
func TestPrepareRejectsBadCache(t *testing.T) {
	p := &Persona{File: "SOUL.md", Redactions: []Redaction{{Pattern: "(", Line: 7}}}
	if err := p.Prepare(); err == nil || err.Error() != `SOUL.md:7: invalid redaction regex "(": missing closing )` {
		t.Fatalf("Prepare() = %v", err)
	}
	if _, err := p.Compile(); err == nil {
		t.Fatal("Compile() of an invalid pattern succeeded")
	}
}
