package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
)

// maxAnswerTokens bounds the answer, which holds every page written in
// full. 32,000 is within the output limit of the current Sonnet and Opus
// models (64k and 32k); the client streams, so a long answer is no timeout
// risk.
const maxAnswerTokens = 32_000

// instructions follow the mandate in the sub-query's system prompt.
const instructions = `You maintain the knowledge base %q: a markdown wiki that people and agents navigate by reading files (there is no search index). Its raw/ folder holds captured material; its wiki/ folder holds the pages synthesised from it.

Synthesise the raw material into the wiki: create pages for new topics, and update the pages it makes out of date. Keep to what the material says; do not invent facts. Stay within the mandate above.

Rules:
- Write only files wiki/<name>.md directly under wiki/, with lowercase hyphenated names.
- Give each file's complete new content, starting with a "# " title.
- List only the pages you create or change. You see existing pages by title only, so rewrite one only when the material requires it, and then in full.
- List in "delete" the pages that are obsolete or merged into others.

Answer with one JSON object and nothing else:
{"files":[{"path":"wiki/<name>.md","content":"..."}],"delete":["wiki/<old>.md"]}`

// answer is the model's JSON answer.
type answer struct {
	Files []struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	} `json:"files"`
	Delete []string `json:"delete"`
}

// synthesise runs the one model call of an ingest: no tools, no chat.
func (in *Ingester) synthesise(ctx context.Context, label string, src sources) (answer, error) {
	system := fmt.Sprintf(instructions, label)
	if m := strings.TrimSpace(in.Mandate); m != "" {
		system = "You work for a persona whose mandate is:\n" + m + "\n\n" + system
	}
	msg, err := in.Model.Send(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(in.Model.Model()),
		MaxTokens: maxAnswerTokens,
		System:    []anthropic.TextBlockParam{{Text: system}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(userPrompt(src)))},
	})
	if err != nil {
		return answer{}, fmt.Errorf("model call: %w", err)
	}
	if msg.StopReason == anthropic.StopReasonMaxTokens {
		return answer{}, fmt.Errorf("the model's answer was cut off at %d tokens", maxAnswerTokens)
	}
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	return parseAnswer(text.String())
}

// userPrompt lays out the README, the raw files and the wiki index.
func userPrompt(src sources) string {
	var b strings.Builder
	b.WriteString("<file path=\"README.md\">\n" + src.readme + "\n</file>\n\n")
	fmt.Fprintf(&b, "Raw files (%d):\n", len(src.raw))
	for _, f := range src.raw {
		fmt.Fprintf(&b, "<file path=%q>\n%s\n</file>\n", f.path, f.content)
	}
	b.WriteString("\nExisting wiki pages:\n")
	if len(src.index) == 0 {
		b.WriteString("(none)\n")
	}
	for _, p := range src.index {
		fmt.Fprintf(&b, "- %s: %s\n", p.path, p.title)
	}
	return b.String()
}

// parseAnswer decodes the first JSON object of text, so that a ```json
// fence or a sentence around it does no harm.
func parseAnswer(text string) (answer, error) {
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return answer{}, errors.New("the model's answer holds no JSON object")
	}
	var a answer
	if err := json.NewDecoder(strings.NewReader(text[i:])).Decode(&a); err != nil {
		return answer{}, fmt.Errorf("the model's answer is not the JSON asked for: %w", err)
	}
	return a, nil
}
