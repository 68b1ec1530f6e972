package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// renderCard returns the card's blocks as the JSON the platform receives.
func renderCard(t *testing.T, c *pipeline.Card) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(cardBlocks(c))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func blockTypes(blocks []map[string]any) string {
	var types []string
	for _, b := range blocks {
		types = append(types, b["type"].(string))
	}
	return strings.Join(types, ",")
}

func sectionText(b map[string]any) string {
	text, _ := b["text"].(map[string]any)
	s, _ := text["text"].(string)
	return s
}

func TestCardBlocks(t *testing.T) {
	long := strings.Repeat("é", 5000)
	tests := []struct {
		name      string
		card      pipeline.Card
		types     string
		contains  []string
		forbidden []string
	}{
		{
			name: "pending with details",
			card: pipeline.Card{ID: "a1", Category: "Bash", Summary: "run a < b && c", Details: "cmd ```x```", Digest: "abc",
				Actions: []string{pipeline.ActionApprove, pipeline.ActionDeny}},
			types:     "section,section,context,actions",
			contains:  []string{"*Approval needed* · Bash", "run a &lt; b &amp;&amp; c", "digest `abc`", "'''x'''"},
			forbidden: []string{"a < b", "```x```"},
		},
		{
			name:     "resolved",
			card:     pipeline.Card{ID: "a2", Category: "skills", Summary: "sync", Digest: "def", Outcome: "denied by <@U1>"},
			types:    "section,context",
			contains: []string{"denied by <@U1>"},
		},
		{
			name:  "no digest, no actions",
			card:  pipeline.Card{ID: "a3", Summary: "s"},
			types: "section",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blocks := renderCard(t, &tc.card)
			if got := blockTypes(blocks); got != tc.types {
				t.Errorf("block types = %s, want %s", got, tc.types)
			}
			raw, _ := json.Marshal(blocks)
			all := string(raw)
			var texts strings.Builder
			for _, b := range blocks {
				texts.WriteString(sectionText(b) + "\n")
				if els, ok := b["elements"].([]any); ok && b["type"] == "context" {
					for _, e := range els {
						texts.WriteString(e.(map[string]any)["text"].(string) + "\n")
					}
				}
			}
			for _, want := range tc.contains {
				if !strings.Contains(texts.String(), want) {
					t.Errorf("%q missing from %s", want, all)
				}
			}
			for _, bad := range tc.forbidden {
				if strings.Contains(texts.String(), bad) {
					t.Errorf("%q present in %s", bad, all)
				}
			}
		})
	}

	t.Run("long texts are cut to the section limit", func(t *testing.T) {
		blocks := renderCard(t, &pipeline.Card{ID: "a4", Category: "Bash", Summary: long, Details: long,
			Actions: []string{pipeline.ActionApprove}})
		for i, b := range blocks[:2] {
			text := sectionText(b)
			if n := utf8.RuneCountInString(text); n > cardSectionMax {
				t.Errorf("section %d has %d characters, limit %d", i, n, cardSectionMax)
			}
			if !strings.Contains(text, "…") {
				t.Errorf("section %d cut without an ellipsis", i)
			}
		}
		if !strings.HasSuffix(sectionText(blocks[1]), "\n```") {
			t.Error("cut details lost their closing fence")
		}
	})

	t.Run("cut never leaves half an entity", func(t *testing.T) {
		got := cardTruncate(strings.Repeat("a", 8)+"&amp;", 10)
		if got != "aaaaaaaa…" {
			t.Errorf("cardTruncate = %q, want aaaaaaaa…", got)
		}
	})

	t.Run("fallback text", func(t *testing.T) {
		got := cardFallbackText(&pipeline.Card{Category: "Bash", Summary: "a<b", Outcome: "approved by <@U1>"})
		if want := "Approval needed: Bash: a&lt;b (approved by <@U1>)"; got != want {
			t.Errorf("fallback = %q, want %q", got, want)
		}
	})
}
