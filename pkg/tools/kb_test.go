package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKBListAndOpen(t *testing.T) {
	home := t.TempDir()
	mk := func(path, body string) {
		t.Helper()
		p := filepath.Join(home, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("agent.json", `{"knowledge":[{"label":"runbooks","git":"github.com:acme/runbooks","ref":"main"}],"agent_knowledge":{"label":"notes","git":"github.com:acme/notes","ref":"main"}}`)
	mk("knowledge/runbooks/README.md", "# Runbooks\n\nHow we operate the platform.\n")
	mk("knowledge/notes/README.md", "# Team notes\n")
	mk("knowledge/local-only/README.md", "Scratch pages.\n")
	k := &KBServer{Home: home}
	res := call(t, toolNamed(t, k.Tools(), KBList), map[string]string{})
	for _, want := range []string{"runbooks (github.com:acme/runbooks; read-only", "How we operate the platform.",
		"notes (github.com:acme/notes; writable", "Team notes", "local-only (local; read-only"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("list_kbs lacks %q:\n%s", want, res.Text)
		}
	}
	open := toolNamed(t, k.Tools(), KBOpen)
	if res := call(t, open, map[string]string{"label": "runbooks"}); res.IsError || !strings.Contains(res.Text, "How we operate") {
		t.Fatalf("open_kb = %+v", res)
	}
	for _, bad := range []string{"../etc", "missing"} {
		if res := call(t, open, map[string]string{"label": bad}); !res.IsError {
			t.Fatalf("open_kb(%q) = %+v, want an error", bad, res)
		}
	}
}
