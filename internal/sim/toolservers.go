package sim

import (
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// ToolServer is a tool server with per-person sign-in ("auth": "oauth")
// that the simulator serves itself (a scenario's `tool_servers`): the
// protocol over HTTP on loopback, demanding the token of one person's
// account on every request.
type ToolServer struct {
	Name string
	// Tools are its tools, in the file's order, each with its canned
	// answer; ToolAccount in an answer is the account acting.
	Tools []ServedTool
	// Connected are the people connected from the start, their tokens
	// stored as a sign-in stores them (the sign-in stays out of the
	// simulator).
	Connected []Connection
}

// ServedTool is one tool of a ToolServer.
type ServedTool struct {
	Name   string
	Answer string
}

// Connection is one person's account with a ToolServer.
type Connection struct {
	// As is a role or a user id, as in `as`.
	As      string
	Account string
}

// ToolAccount is what a served tool's answer replaces with the account
// whose token called it.
const ToolAccount = "{account}"

// toolName is a tool server's or a tool's name: mcp.json's server names.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// toolServers reads `tool_servers`: a mapping of server names to
// `{tools: {name: answer, …}, connected: {role or user id: account, …}}`.
func (p *parser) toolServers(n *yaml.Node) ([]ToolServer, error) {
	var out []ToolServer
	err := p.mapping(n, "", "tool_servers", func(k, v *yaml.Node) error {
		if !toolName.MatchString(k.Value) || strings.Contains(k.Value, "__") {
			return p.fail(k, "tool_servers: %q is not a tool server name (letters, digits, - and _, no __)", k.Value)
		}
		srv := ToolServer{Name: k.Value}
		where := " in tool_servers." + k.Value
		err := p.mapping(v, where, "tool_servers."+k.Value, func(k2, v2 *yaml.Node) error {
			switch k2.Value {
			case "tools":
				return p.mapping(v2, where+".tools", "tools", func(tk, tv *yaml.Node) error {
					if !toolName.MatchString(tk.Value) {
						return p.fail(tk, "tool_servers.%s.tools: %q is not a tool name (letters, digits, - and _)", srv.Name, tk.Value)
					}
					answer, err := p.str(tk, tv, where+".tools")
					if err != nil {
						return err
					}
					srv.Tools = append(srv.Tools, ServedTool{Name: tk.Value, Answer: answer})
					return nil
				})
			case "connected":
				return p.mapping(v2, where+".connected", "connected", func(ck, cv *yaml.Node) error {
					if _, ok := RoleUser(ck.Value); !ok {
						return p.fail(ck, "tool_servers.%s.connected: unknown person %q (want %s, or a user id such as U0ALICE)", srv.Name, ck.Value, orList(Roles))
					}
					account, err := p.str(ck, cv, where+".connected")
					if err != nil {
						return err
					}
					if strings.TrimSpace(account) == "" {
						return p.fail(cv, "tool_servers.%s.connected.%s: the account is empty", srv.Name, ck.Value)
					}
					srv.Connected = append(srv.Connected, Connection{As: ck.Value, Account: account})
					return nil
				})
			}
			return p.fail(k2, "unknown key %q%s (want tools or connected)", k2.Value, where)
		})
		if err != nil {
			return err
		}
		if len(srv.Tools) == 0 {
			return p.fail(k, "tool_servers.%s: no tools (want tools: {name: answer})", srv.Name)
		}
		out = append(out, srv)
		return nil
	})
	return out, err
}
