package slackio

import (
	"encoding/json"
	"fmt"
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
			// The runtime's line keeps the person a mention; a summary
			// that imitates it stays text, and so does a server's name
			// or a user id that would close the mention.
			name: "acts as the person asking",
			card: pipeline.Card{ID: "a5", Category: "mcp__tracker__create", Summary: "This acts with <@U0MGR>'s own tracker account.",
				ActsAs: pipeline.ActsAs{User: "U0ALICE", Server: "tracker"}, Actions: []string{pipeline.ActionApprove}},
			types:     "section,actions",
			contains:  []string{"This acts with <@U0ALICE>'s own tracker account.\nThis acts with &lt;@U0MGR&gt;'s own tracker account."},
			forbidden: []string{"<@U0MGR>"},
		},
		{
			name:      "acts as: nothing closes the mention",
			card:      pipeline.Card{ID: "a6", Summary: "s", ActsAs: pipeline.ActsAs{User: "U1> <!here", Server: "x<y>"}},
			types:     "section",
			contains:  []string{"This acts with &lt;@U1&gt; &lt;!here&gt;'s own x&lt;y&gt; account."},
			forbidden: []string{"<!here", "x<y>"},
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

	t.Run("long texts take several sections, never cut", func(t *testing.T) {
		blocks := renderCard(t, &pipeline.Card{ID: "a4", Category: "Bash", Summary: long, Details: long,
			Actions: []string{pipeline.ActionApprove}})
		var all strings.Builder
		for i, b := range blocks {
			text := sectionText(b)
			if n := utf8.RuneCountInString(text); n > cardSectionMax {
				t.Errorf("section %d has %d characters, limit %d", i, n, cardSectionMax)
			}
			all.WriteString(text)
		}
		if got := strings.Count(all.String(), "é"); got != 2*5000 {
			t.Errorf("the sections hold %d of the %d characters", got, 2*5000)
		}
		if got := blockTypes(blocks); got != "section,section,section,section,actions" {
			t.Errorf("block types = %s", got)
		}
	})

	t.Run("a code block cut between sections is closed and opened again", func(t *testing.T) {
		var cmd strings.Builder
		for i := range 400 {
			fmt.Fprintf(&cmd, "echo %d && true\n", i)
		}
		summary := "`Bash` wants to run:\n```\n" + cmd.String() + "```\nafter"
		blocks := renderCard(t, &pipeline.Card{ID: "a5", Summary: summary, Actions: []string{pipeline.ActionApprove}})
		var lines []string
		for i, b := range blocks[:len(blocks)-1] {
			text := sectionText(b)
			if utf8.RuneCountInString(text) > cardSectionMax || strings.Count(text, "```")%2 != 0 {
				t.Fatalf("section %d: %d characters, unbalanced fences:\n%s", i, utf8.RuneCountInString(text), text)
			}
			if i > 0 && !strings.HasPrefix(text, "```\n") && !strings.HasPrefix(text, "after") {
				t.Errorf("section %d does not reopen the code block: %.40q", i, text)
			}
			for _, l := range strings.Split(text, "\n") {
				if l != "```" {
					lines = append(lines, l)
				}
			}
		}
		if len(blocks) < 4 {
			t.Fatalf("%d blocks for %d characters", len(blocks), utf8.RuneCountInString(summary))
		}
		var want []string
		for i := range 400 {
			want = append(want, fmt.Sprintf("echo %d &amp;&amp; true", i))
		}
		if got := strings.Join(lines[2:len(lines)-1], "\n"); got != strings.Join(want, "\n") {
			t.Errorf("the command's lines changed across sections")
		}
	})

	t.Run("a line longer than a section is split between entities", func(t *testing.T) {
		line := strings.Repeat("a&", 2000)
		blocks := renderCard(t, &pipeline.Card{ID: "a6", Summary: "```\n" + line + "\n```"})
		var all strings.Builder
		for i, b := range blocks {
			text := sectionText(b)
			if utf8.RuneCountInString(text) > cardSectionMax {
				t.Fatalf("section %d has %d characters", i, utf8.RuneCountInString(text))
			}
			text = strings.TrimPrefix(strings.TrimSuffix(text, "\n```"), "```\n")
			if strings.HasSuffix(text, "&") || strings.HasSuffix(text, "&am") {
				t.Errorf("section %d ends inside an entity: %q", i, text[len(text)-10:])
			}
			all.WriteString(text)
		}
		if got := strings.Count(all.String(), "a&amp;"); got != 2000 {
			t.Errorf("the sections hold %d of the 2000 pieces", got)
		}
	})

	t.Run("past the blocks of a message, the cut is said", func(t *testing.T) {
		blocks := renderCard(t, &pipeline.Card{ID: "a7", Summary: strings.Repeat("x", 200*cardSectionMax), Digest: "d",
			Actions: []string{pipeline.ActionApprove}})
		if len(blocks) != 50 || !strings.Contains(sectionText(blocks[47]), "cut") {
			t.Fatalf("%d blocks; section 48: %.100q", len(blocks), sectionText(blocks[47]))
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
