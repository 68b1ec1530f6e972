package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
)

// maxSteps caps the sub-agent's model calls: reaching it fails the ingest.
const maxSteps = 30

// maxStepTokens bounds one answer of the sub-agent: a page written in full
// fits well within it.
const maxStepTokens = 16_000

// instructions follow the mandate in the sub-agent's system prompt.
const instructions = `You maintain the knowledge base %q: a markdown wiki that people and agents navigate by reading files (there is no search index). Its raw/ folder holds captured material; its wiki/ folder holds the pages synthesised from it. Your working folder is the knowledge base: relative paths resolve there.

Synthesise the raw material into the wiki: create pages for new topics, and update the pages it makes out of date. Keep to what the material says; do not invent facts. Stay within the mandate above.

How to work:
- You get the list of raw files (the new and changed ones first) and the wiki's index, not their contents: read what you need with Read, Grep, Glob and LS.
- Write pages with Write (whole page) or Edit (a part of one). Only wiki/<name>.md can be written, with a lowercase hyphenated name and a "# " title; anything else is refused.
- When the wiki is up to date, answer with one short sentence saying what you changed, and no tool call.`

// synthesise runs the sub-agent: a tool-use loop over the knowledge base
// in dir with the file tools, until the model answers without a tool call.
// No chat tools, no approvals, no shell.
func (in *Ingester) synthesise(ctx context.Context, label, dir string, src sources, log *slog.Logger) error {
	kb, err := newKBTools(dir)
	if err != nil {
		return err
	}
	system := fmt.Sprintf(instructions, label)
	if m := strings.TrimSpace(in.Mandate); m != "" {
		system = "You work for a persona whose mandate is:\n" + m + "\n\n" + system
	}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(userPrompt(src)))}
	tools := kb.definitions()
	for step := 1; step <= maxSteps; step++ {
		msg, err := in.Model.Send(ctx, anthropic.MessageNewParams{
			Model:     anthropic.Model(in.Model.Model()),
			MaxTokens: maxStepTokens,
			System:    []anthropic.TextBlockParam{{Text: system}},
			Messages:  msgs,
			Tools:     tools,
		})
		if err != nil {
			return fmt.Errorf("model call: %w", err)
		}
		msgs = append(msgs, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			if b.Type != "tool_use" {
				continue
			}
			text, isErr := kb.call(b.Name, b.Input)
			if isErr {
				log.InfoContext(ctx, "ingest: a tool call was refused", "tool", b.Name, "reason", oneLine(text))
			}
			results = append(results, anthropic.NewToolResultBlock(b.ID, text, isErr))
		}
		if len(results) == 0 {
			if msg.StopReason == anthropic.StopReasonMaxTokens {
				return fmt.Errorf("the model's answer was cut off at %d tokens", maxStepTokens)
			}
			return nil
		}
		msgs = append(msgs, anthropic.NewUserMessage(results...))
	}
	return fmt.Errorf("turn cap reached (%d model calls) before the model was done", maxSteps)
}

// userPrompt lists the README, the raw files (changed ones first, with
// their sizes) and the wiki index: names and titles, never whole files.
func userPrompt(src sources) string {
	var b strings.Builder
	if src.readme != "" {
		b.WriteString("<file path=\"README.md\">\n" + src.readme + "\n</file>\n\n")
	}
	fmt.Fprintf(&b, "Raw files (%d", len(src.raw))
	if src.changed > 0 {
		fmt.Fprintf(&b, "; the first %d are new or changed since the wiki was last synthesised", src.changed)
	}
	b.WriteString("):\n")
	for _, f := range src.raw {
		fmt.Fprintf(&b, "- %s (%d bytes)\n", f.path, f.size)
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

// oneLine is the first line of s, at most 200 bytes.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
