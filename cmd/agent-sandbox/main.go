// Command agent-sandbox is the sandbox helper on its own: what
// `agent sandbox-exec` does (limits and the pids group, then a confined
// child of its own — no_new_privs and Landlock — that execs the command,
// and, once it ends, the end of everything it started), in a binary that
// links nothing else. Shipped beside `agent`, it is the helper the runtime
// starts for every Bash command and stdio tool server: it starts in about
// a millisecond, where the whole runtime's binary takes several to
// initialise. Without it the runtime re-executes itself as the helper.
package main

import (
	"os"

	"github.com/persona-runtime/agent/internal/sandbox"
)

func main() {
	if !sandbox.IsHelper(os.Args) {
		os.Stderr.WriteString("agent-sandbox: run by the agent runtime as `agent-sandbox " + sandbox.HelperCommand + " [rules] -- command`\n")
		os.Exit(2)
	}
	os.Exit(sandbox.Main(os.Args[2:]))
}
