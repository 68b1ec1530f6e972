package ingest

import (
	"reflect"
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

func TestParseAnswer(t *testing.T) {
	want := answer{Delete: []string{"wiki/old.md"}}
	want.Files = append(want.Files, struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}{"wiki/a.md", "# A\n```go\nx := 1\n```\n"})
	body := `{"files":[{"path":"wiki/a.md","content":"# A\n` + "```go\\nx := 1\\n```" + `\n"}],"delete":["wiki/old.md"]}`
	tests := map[string]string{
		"bare":            body,
		"fenced":          "```json\n" + body + "\n```",
		"prose and fence": "Here is the update.\n\n```json\n" + body + "\n```\nDone.",
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseAnswer(text)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("parseAnswer = %+v, %v; want %+v", got, err, want)
			}
		})
	}
	for _, bad := range []string{"", "no json here", `{"files": [`, `{"files": "x"}`} {
		if _, err := parseAnswer(bad); err == nil {
			t.Errorf("parseAnswer(%q) succeeded", bad)
		}
	}
}
