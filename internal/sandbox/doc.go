// Package sandbox confines what the agent runs — every Bash command and
// every stdio tool server — with the kernel, so that nothing it runs can
// read a credential.
//
// The runtime never restricts itself (Landlock is irreversible and applies
// to every thread). Instead a command is started through the runtime's own
// binary under a hidden subcommand, `agent sandbox-exec`: that short-lived
// helper applies the rules to itself — resource limits, a pids cgroup where
// the runtime may make one, no_new_privs and a Landlock domain — and then
// execs the command, which inherits them all. Nothing else needs
// installing.
//
// The Landlock domain lets the command read the system (/usr, /etc, the
// libraries, a few devices), read the skills and knowledge trees, write
// only its own directories (the thread's workspace and a private TMPDIR),
// and nothing else: not the runtime's home with its .env and database, not
// /proc (so not the runtime's environment), not other threads'
// workspaces. Where the kernel has them, TCP connects and binds are denied
// with AGENT_SANDBOX_NET=deny, and signals and abstract UNIX sockets
// cannot reach processes outside the domain.
package sandbox
