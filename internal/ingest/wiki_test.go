package ingest

import (
	"testing"
)

func TestWikiName(t *testing.T) {
	tests := []struct {
		path, name string
	}{
		{"wiki/a.md", "a.md"},
		{"wiki/deploy-runbook.md", "deploy-runbook.md"},
		{"wiki/../SOUL.md", ""},
		{"../SOUL.md", ""},
		{"raw/x.md", ""},
		{"README.md", ""},
		{"/wiki/a.md", ""},
		{"./wiki/a.md", ""},
		{"wiki//a.md", ""},
		{"wiki/sub/a.md", ""},
		{"wiki/a.txt", ""},
		{"wiki/.md", ""},
		{"wiki/.hidden.md", ""},
		{`wiki\a.md`, ""},
		{"wiki/a.md\x00", ""},
		{"C:wiki/a.md", ""},
		{"wiki/", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			name, ok := wikiName(tt.path)
			if name != tt.name || ok != (tt.name != "") {
				t.Errorf("wikiName(%q) = %q, %v; want %q", tt.path, name, ok, tt.name)
			}
		})
	}
}
