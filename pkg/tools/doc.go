// Package tools holds the tools the agent calls: the in-process tool servers
// (agent_chat, agent_skills, agent_kb), the built-in file and shell tools,
// and the mounted external tool servers of mcp.json, behind one Registry;
// and the permission modes (permission.go) that decide which need a card.
//
// A tool's full name is the one the model sees: mcp__<server>__<tool> for
// tool servers (mcp__agent_chat__reply), the bare name for built-ins (Read).
//
// Confinement (confine.go) is what the tools may reach of the host: the
// runtime's files they never open, the minimal environment Bash and the
// tool servers start from, and what a confined command may read besides
// the system. The kernel sandbox (internal/sandbox, behind Confiner) makes
// every Bash command and stdio tool server keep to it; the file tools keep
// to it by themselves, through the root of the thread's workspace, and so
// does Attachments, which saves the files of a message there.
package tools
