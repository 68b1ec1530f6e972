package fake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// anthMaxCacheBreakpoints is the real API's limit on cache_control markers per
// request (a fifth one is a 400).
const anthMaxCacheBreakpoints = 4

// anthToolName is the pattern the real API requires of custom tool names.
var anthToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// anthValidate returns the message of the 400 the real API would answer body
// with, or "" for a valid body. messages reports the /v1/messages endpoint,
// which also requires max_tokens.
func anthValidate(body []byte, messages bool) string {
	var w anthRequestWire
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Sprintf("invalid JSON body: %v", err)
	}
	if w.Model == "" {
		return "model: Field required"
	}
	if messages && w.MaxTokens == nil {
		return "max_tokens: Field required"
	}
	if w.MaxTokens != nil && *w.MaxTokens < 0 {
		return "max_tokens: Input should be greater than or equal to 0"
	}
	if len(w.Messages) == 0 {
		return "messages: Field required"
	}
	msgs, err := anthDecodeMessages(w.Messages)
	if err != nil {
		return fmt.Sprintf("messages: %v", err)
	}
	if len(msgs) == 0 {
		return "messages: at least one message is required"
	}
	breakpoints, msg := anthCheckTools(w.Tools)
	if msg != "" {
		return msg
	}
	n, msg := anthCheckSystem(w.System)
	if msg != "" {
		return msg
	}
	breakpoints += n
	n, msg = anthCheckMessages(msgs)
	if msg != "" {
		return msg
	}
	breakpoints += n
	if breakpoints > anthMaxCacheBreakpoints {
		return fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", anthMaxCacheBreakpoints, breakpoints)
	}
	return ""
}

// anthCheckTools validates the tools array and counts its cache breakpoints.
func anthCheckTools(raw json.RawMessage) (int, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, ""
	}
	var tools []struct {
		Type         string          `json:"type"`
		Name         string          `json:"name"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return 0, fmt.Sprintf("tools: %v", err)
	}
	var breakpoints int
	seen := map[string]bool{}
	for i, t := range tools {
		if anthPresent(t.CacheControl) {
			breakpoints++
		}
		if seen[t.Name] {
			return 0, "tools: Tool names must be unique."
		}
		seen[t.Name] = true
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool (web_search_...), defined by the API
		}
		if !anthToolName.MatchString(t.Name) {
			return 0, fmt.Sprintf("tools.%d.custom.name: String should match pattern '%s'", i, anthToolName)
		}
		if len(t.InputSchema) == 0 {
			return 0, fmt.Sprintf("tools.%d.custom.input_schema: Field required", i)
		}
	}
	return breakpoints, ""
}

// anthCheckSystem validates the system prompt and counts its cache breakpoints.
func anthCheckSystem(raw json.RawMessage) (int, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return 0, ""
	}
	var blocks []AnthropicContent
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return 0, fmt.Sprintf("system: %v", err)
	}
	var breakpoints int
	for i, b := range blocks {
		if b.Type != "text" {
			return 0, fmt.Sprintf("system.%d.type: Input should be 'text'", i)
		}
		if b.Text == "" {
			return 0, "system: text content blocks must be non-empty"
		}
		if anthPresent(b.CacheControl) {
			breakpoints++
		}
	}
	return breakpoints, ""
}

// anthCheckMessages validates roles, text blocks and the tool_use/tool_result
// pairing rule, and counts the messages' cache breakpoints. The pairing rule:
// every tool_use of an assistant message is answered by a tool_result with its
// id in the next message, which is a user message opening with its
// tool_result blocks; and every tool_result answers a tool_use of the message
// just before.
func anthCheckMessages(msgs []AnthropicMessage) (int, string) {
	var breakpoints int
	toolUseIDs := map[string]bool{}
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return 0, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(m.Content) == 0 {
			return 0, fmt.Sprintf("messages.%d: all messages must have non-empty content", i)
		}
		var prevUses map[string]bool
		if i > 0 && msgs[i-1].Role == "assistant" {
			prevUses = anthToolUses(msgs[i-1])
		}
		leading := true
		for j, c := range m.Content {
			if anthPresent(c.CacheControl) {
				breakpoints++
			}
			switch c.Type {
			case "":
				return 0, fmt.Sprintf("messages.%d.content.%d.type: Field required", i, j)
			case "text":
				if c.Text == "" {
					return 0, fmt.Sprintf("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
			case "tool_use":
				if m.Role != "assistant" {
					return 0, fmt.Sprintf("messages.%d.content.%d: tool_use blocks are only allowed in assistant messages", i, j)
				}
				if c.ID == "" || c.Name == "" {
					return 0, fmt.Sprintf("messages.%d.content.%d: tool_use blocks need an id and a name", i, j)
				}
				if toolUseIDs[c.ID] {
					return 0, fmt.Sprintf("messages.%d.content.%d: `tool_use` ids must be unique", i, j)
				}
				toolUseIDs[c.ID] = true
			case "image", "document":
				if msg := anthCheckSource(i, j, m.Role, c); msg != "" {
					return 0, msg
				}
			case "tool_result":
				if m.Role != "user" {
					return 0, fmt.Sprintf("messages.%d.content.%d: tool_result blocks are only allowed in user messages", i, j)
				}
				if !leading {
					return 0, fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come before any other content in the message", i, j)
				}
				if !prevUses[c.ToolUseID] {
					return 0, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, c.ToolUseID)
				}
			}
			if c.Type != "tool_result" {
				leading = false
			}
		}
		// The previous message's tool_use blocks are checked once this
		// message's own blocks are, so a misplaced tool_result is reported
		// as such.
		if i > 0 {
			if msg := anthCheckAnswered(i-1, msgs); msg != "" {
				return 0, msg
			}
		}
	}
	if msg := anthCheckAnswered(len(msgs)-1, msgs); msg != "" {
		return 0, msg
	}
	return breakpoints, ""
}

// anthCheckAnswered returns the real API's message when msgs[i] is an
// assistant message with a tool_use that msgs[i+1] does not answer.
func anthCheckAnswered(i int, msgs []AnthropicMessage) string {
	if msgs[i].Role != "assistant" {
		return ""
	}
	missing := anthUnanswered(msgs[i], msgs[i+1:])
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
}

// anthToolUses returns the ids of m's tool_use blocks.
func anthToolUses(m AnthropicMessage) map[string]bool {
	ids := map[string]bool{}
	for _, c := range m.Content {
		if c.Type == "tool_use" {
			ids[c.ID] = true
		}
	}
	return ids
}

// anthUnanswered returns the ids of assistant message m's tool_use blocks that
// the leading tool_result blocks of the next message (the first of rest) do
// not answer.
func anthUnanswered(m AnthropicMessage, rest []AnthropicMessage) []string {
	answered := map[string]bool{}
	if len(rest) > 0 && rest[0].Role == "user" {
		for _, c := range rest[0].Content {
			if c.Type != "tool_result" {
				break
			}
			answered[c.ToolUseID] = true
		}
	}
	var missing []string
	for _, c := range m.Content {
		if c.Type == "tool_use" && !answered[c.ID] {
			missing = append(missing, c.ID)
		}
	}
	return missing
}

// anthPresent reports whether a raw JSON field was sent with a non-null value.
func anthPresent(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// anthImageMaxEncoded is the real API's limit on an image's base64 data
// (it counts the encoded form).
const anthImageMaxEncoded = 5 << 20

// anthImageTypes are the media types the real API takes for an image.
var anthImageTypes = map[string]string{"image/jpeg": "\xff\xd8\xff", "image/png": "\x89PNG\r\n\x1a\n", "image/gif": "GIF8", "image/webp": "RIFF"}

// anthCheckSource validates the base64 source of an image or document block
// c (messages.i.content.j) as the real API does: in a user message, a known
// media type, data that decodes, an image within its size and of the type it
// claims, a document that is a PDF.
func anthCheckSource(i, j int, role string, c AnthropicContent) string {
	at := fmt.Sprintf("messages.%d.content.%d", i, j)
	if role != "user" {
		return fmt.Sprintf("%s: %s blocks are only allowed in user messages", at, c.Type)
	}
	s := c.ParsedSource()
	if s.Type != "base64" {
		return "" // url, file, text sources: not checked here
	}
	data, err := base64.StdEncoding.DecodeString(s.Data)
	if err != nil {
		return fmt.Sprintf("%s.%s.source.base64.data: invalid base64 data", at, c.Type)
	}
	if c.Type == "document" {
		if s.MediaType != "application/pdf" {
			return fmt.Sprintf("%s.document.source.base64.media_type: Input should be 'application/pdf'", at)
		}
		if !strings.HasPrefix(string(data), "%PDF-") {
			return fmt.Sprintf("%s.document.source.base64.data: The PDF specified was not valid.", at)
		}
		return ""
	}
	magic, ok := anthImageTypes[s.MediaType]
	switch {
	case !ok:
		return fmt.Sprintf("%s.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", at)
	case len(s.Data) > anthImageMaxEncoded:
		return fmt.Sprintf("%s.image.source.base64: image exceeds 5 MB maximum: %d bytes > %d bytes", at, len(s.Data), anthImageMaxEncoded)
	case !strings.HasPrefix(string(data), magic):
		return fmt.Sprintf("%s.image.source.base64.data: Image does not match the provided media type %s", at, s.MediaType)
	}
	return ""
}
