// Package tools holds the tools the agent calls: the in-process tool servers
// (agent_chat, and later agent_skills and agent_kb), the built-in file and
// shell tools, and the mounted external tool servers, behind one Registry.
//
// A tool's full name is the one the model sees: mcp__<server>__<tool> for
// tool servers (mcp__agent_chat__reply), the bare name for built-ins (Read).
package tools
