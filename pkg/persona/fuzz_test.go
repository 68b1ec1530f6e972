package persona

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSoul checks that Parse never panics and that what it returns
// holds together: an error is a one-line *ParseError naming the file and a
// line, and a persona survives the JSON round trip of the cache unchanged.
func FuzzParseSoul(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add(Scaffold())
	f.Add([]byte("## Channel <#C1|x>\n- Mode: plan\n## Approvers\n- <@U1>: a, b ; c\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Parse("SOUL.md", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || !strings.HasPrefix(err.Error(), "SOUL.md:") {
				t.Fatalf("error %q is not a *ParseError with a line", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		_ = p.Missing()
		_ = p.Summary()
		_ = p.WarningLines()
		prompt := p.Prompt()
		if prompt != p.Prompt() {
			t.Fatal("Prompt() is not stable")
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var q Persona
		if err := json.Unmarshal(data, &q); err != nil {
			t.Fatal(err)
		}
		if err := q.Prepare(); err != nil {
			t.Fatalf("Prepare after a round trip: %v", err)
		}
		again, _ := json.Marshal(&q)
		if !bytes.Equal(data, again) || q.Prompt() != prompt {
			t.Fatalf("round trip changed the persona:\n%s\n%s", data, again)
		}
		sameAccess(t, p, &q)
	})
}
