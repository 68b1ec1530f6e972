// Package sandbox confines what the agent runs — every Bash command and
// every stdio tool server — with the kernel, so that nothing it runs can
// read a credential.
//
// The runtime never restricts itself (Landlock is irreversible and applies
// to every thread). Instead a command is started through the runtime's own
// binary under a hidden subcommand, `agent sandbox-exec` (or the small
// agent-sandbox binary beside it): that helper applies the limits and a
// pids cgroup where the runtime may make one to itself, becomes a child
// subreaper, and starts itself again as its child, which applies
// no_new_privs and a Landlock domain to itself and execs the command; the
// command inherits them all. The first helper process stays as the
// command's parent and, when the command ends or is stopped, kills
// everything it left behind, setsid or not (see Main). Nothing else needs
// installing.
//
// The Landlock domain lets the command read the system (/usr, /etc, the
// libraries, a few devices), read the trees it is given (the skills and
// knowledge folders and git's configuration: pkg/tools' Confinement says
// which), write only its own directories (the thread's workspace and a
// private TMPDIR), and nothing else: not the runtime's home with its .env
// and database, not /proc (so not the runtime's environment), not other
// threads' workspaces. Where the kernel has them, TCP connects and binds
// are denied with AGENT_SANDBOX_NET=deny, and signals and abstract UNIX
// sockets cannot reach processes outside the domain.
//
// The private TMPDIR is held (a lock, fsutil.MkdirHeld) while its command
// runs and removed after; one that a runtime killed mid-command left is
// removed by the first sandbox the next process makes over its root, once
// untouched for a minute (tempdir.go).
//
// Under AGENT_SANDBOX_NET=allowlist (the default) the command also gets a
// network of its own: a user and network namespace with only a loopback,
// where the helper listens and from which it relays each connection to
// the runtime's egress proxy (Egress; internal/egress) over a socket pair
// the runtime made for the call. See netns_linux.go. Where the kernel
// gives no namespaces, allowlist works as deny and Status says so.
package sandbox
