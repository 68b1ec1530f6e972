package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/persona-runtime/agent/internal/sandbox"
)

// mcpTestServerEnv makes the test binary, re-executed as a stdio server by
// the MCP tests, serve instead of running tests (as the SDK's tests do).
// Values: "stdio" (the test server), "hang" (reads stdin, never answers),
// "crash" (writes to stderr and exits 1).
const mcpTestServerEnv = "MCP_TEST_SERVER"

// TestMain is shared by the whole package's tests: it only diverts to a
// test tool server when asked to.
func TestMain(m *testing.M) {
	if sandbox.IsHelper(os.Args) { // a confined server starts through the helper
		os.Exit(sandbox.Main(os.Args[2:]))
	}
	switch os.Getenv(mcpTestServerEnv) {
	case "":
		os.Exit(m.Run())
	case "stdio":
		if err := newMCPTestServer(true).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "hang":
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "crash":
		fmt.Fprintln(os.Stderr, "fatal: cannot start test server")
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "unknown", mcpTestServerEnv)
		os.Exit(2)
	}
	os.Exit(0)
}

type mcpTextIn struct {
	Text string `json:"text"`
}

type mcpNameIn struct {
	Name string `json:"name"`
}

type mcpNoIn struct{}

type mcpFileIn struct {
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
}

func mcpText(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// newMCPTestServer is the test tool server; process adds the tools that
// look at (or end) the process, for the stdio server only.
func newMCPTestServer(process bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testsrv", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpTextIn) (*mcp.CallToolResult, any, error) {
			return mcpText(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fail."},
		func(context.Context, *mcp.CallToolRequest, mcpNoIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("boom")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "A chart."},
		func(context.Context, *mcp.CallToolRequest, mcpNoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "chart"},
				&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
			}}, nil, nil
		})
	if !process {
		return s
	}
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Whether a variable is set."},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpNameIn) (*mcp.CallToolResult, any, error) {
			if v, ok := os.LookupEnv(in.Name); ok {
				return mcpText("set: " + v), nil, nil
			}
			return mcpText("unset"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "args", Description: "The command-line arguments."},
		func(context.Context, *mcp.CallToolRequest, mcpNoIn) (*mcp.CallToolResult, any, error) {
			return mcpText(strings.Join(os.Args[1:], " ")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The process id."},
		func(context.Context, *mcp.CallToolRequest, mcpNoIn) (*mcp.CallToolResult, any, error) {
			return mcpText(fmt.Sprint(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read", Description: "Read a file, or write it when text is set."},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpFileIn) (*mcp.CallToolResult, any, error) {
			if in.Text != "" {
				return mcpText("wrote"), nil, os.WriteFile(in.Path, []byte(in.Text), 0o600)
			}
			b, err := os.ReadFile(in.Path)
			return mcpText(string(b)), nil, err
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Start a program in a session of its own, and leave it."},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpTextIn) (*mcp.CallToolResult, any, error) {
			args := strings.Fields(in.Text)
			cmd := exec.Command(args[0], args[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return mcpText(fmt.Sprint(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit at once."},
		func(context.Context, *mcp.CallToolRequest, mcpNoIn) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	return s
}
