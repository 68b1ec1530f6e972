package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpMaxToolName is the longest tool name the model provider accepts
// (^[a-zA-Z0-9_-]{1,64}$ in the Messages API's tool definition).
const mcpMaxToolName = 64

// mcpDefaultSchema is the input schema of a tool whose server gives none.
var mcpDefaultSchema = json.RawMessage(`{"type":"object"}`)

// tool converts a listed tool. Characters the provider does not accept in
// a name become '_'; the server is still called with the original name.
func (s *mcpSession) tool(t *mcp.Tool) (Tool, error) {
	name := "mcp__" + s.srv.Name + "__" + strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, t.Name)
	if t.Name == "" || len(name) > mcpMaxToolName {
		return Tool{}, fmt.Errorf("tool name %q empty or longer than %d characters once prefixed", name, mcpMaxToolName)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	remote := t.Name
	return Tool{
		Name:        name,
		Description: desc,
		Schema:      mcpSchema(t.InputSchema),
		Call: func(ctx context.Context, input json.RawMessage) (Result, error) {
			return s.call(ctx, remote, input), nil
		},
	}, nil
}

// mcpSchema marshals a listed input schema, falling back to an empty object
// schema when there is none or it is not an object.
func mcpSchema(v any) json.RawMessage {
	if v == nil {
		return mcpDefaultSchema
	}
	b, err := json.Marshal(v)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return mcpDefaultSchema
	}
	return b
}

// call runs the remote tool. Every failure, a dead server included, is an
// error Result naming the server: the model reads it and carries on.
func (s *mcpSession) call(ctx context.Context, tool string, input json.RawMessage) Result {
	var args map[string]json.RawMessage
	if len(bytes.TrimSpace(input)) > 0 {
		if err := json.Unmarshal(input, &args); err != nil {
			return Errorf("invalid input: want a JSON object: %v", err)
		}
	}
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	switch {
	case err != nil && ctx.Err() != nil:
		return Errorf("tool server %q: %s: %v", s.srv.Name, tool, ctx.Err())
	case err != nil && (s.closing.Load() || s.died.Load() || errors.Is(err, mcp.ErrConnectionClosed)):
		return Errorf("tool server %q is not running", s.srv.Name)
	case err != nil:
		return Errorf("tool server %q: %s: %s", s.srv.Name, tool, s.scrubLine(err.Error()))
	case res == nil:
		return Errorf("tool server %q: %s: empty response", s.srv.Name, tool)
	case len(res.InputRequests) > 0:
		return Errorf("tool server %q: %s asks for interactive input, which this runtime cannot give", s.srv.Name, tool)
	}
	text := mcpResultText(res)
	if res.IsError && text == "" {
		text = fmt.Sprintf("tool server %q: %s failed without a message", s.srv.Name, tool)
	}
	return Result{Text: text, IsError: res.IsError}
}

// mcpResultText joins the text of a result; other content is summarised
// ("[image image/png]"), since a tool_result here carries text only.
func mcpResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, summary("image", c.MIMEType))
		case *mcp.AudioContent:
			parts = append(parts, summary("audio", c.MIMEType))
		case *mcp.ResourceLink:
			parts = append(parts, summary("resource link", c.URI))
		case *mcp.EmbeddedResource:
			switch {
			case c.Resource == nil:
				parts = append(parts, "[resource]")
			case c.Resource.Text != "":
				parts = append(parts, c.Resource.Text)
			default:
				parts = append(parts, summary("resource", c.Resource.URI))
			}
		default:
			parts = append(parts, "[unsupported content]")
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func summary(kind, detail string) string {
	if detail == "" {
		return "[" + kind + "]"
	}
	return "[" + kind + " " + detail + "]"
}
