package agent

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Before the envelope (pipeline.Envelope), a person's message was stored
// as the text "<@U…> (role): words", which a message holding a newline
// could make read as two people's lines. A history written then is sent
// with each such message in its envelope instead: the runtime wrote the
// first line's prefix, so it names the author; everything after it is
// the author's words, escaped like any others.

// legacyMarkers are how the stored JSON of a legacy message's first block
// starts its text (the encoder escapes "<").
var legacyMarkers = [][]byte{[]byte(`"text":"\u003c@`), []byte(`"text":"<@`)}

// legacyWindow is how far into a row the first block's text starts: the
// text key comes first or after the type key.
const legacyWindow = 48

// upgradeLegacy returns the content of a user row with a legacy first
// text block put in its envelope, or content as it is.
func upgradeLegacy(content json.RawMessage) json.RawMessage {
	head := content[:min(len(content), legacyWindow)]
	if !bytes.Contains(head, legacyMarkers[0]) && !bytes.Contains(head, legacyMarkers[1]) {
		return content
	}
	var blocks []anthropic.ContentBlockParamUnion
	if err := json.Unmarshal(content, &blocks); err != nil || len(blocks) == 0 || blocks[0].OfText == nil {
		return content
	}
	id, role, words, ok := parseLegacy(blocks[0].OfText.Text)
	if !ok {
		return content
	}
	blocks[0].OfText.Text = pipeline.Envelope(id, role, words)
	out, err := json.Marshal(blocks)
	if err != nil {
		return content
	}
	return out
}

// parseLegacy splits "<@U…> (role): words"; ok is false for other text.
func parseLegacy(text string) (userID, role, words string, ok bool) {
	rest, found := strings.CutPrefix(text, "<@")
	if !found {
		return "", "", "", false
	}
	userID, rest, found = strings.Cut(rest, "> (")
	if !found || strings.ContainsAny(userID, " \n<>") {
		return "", "", "", false
	}
	role, words, found = strings.Cut(rest, "): ")
	if !found {
		role, found = strings.CutSuffix(rest, "):")
	}
	if !found || pipeline.EnvelopeRole(role) != role {
		return "", "", "", false
	}
	return userID, role, words, true
}
