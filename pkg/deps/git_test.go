package deps

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// ConfinedGit starts each git command through its confine, which may
// rewrite it, and cleans up after it; a refusal is a GitError naming the
// subcommand.
func TestConfinedGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	var confined, cleaned int
	git := ConfinedGit(func(_ context.Context, cmd *exec.Cmd) (func(), error) {
		confined++
		if !strings.HasSuffix(cmd.Path, "git") || cmd.Env == nil {
			t.Errorf("confine got %s with env %v", cmd.Path, cmd.Env)
		}
		cmd.Args = append(cmd.Args[:1], "--version") // what the sandbox does: rewrite it
		return func() { cleaned++ }, nil
	})
	out, err := git(t.Context(), "", "status")
	if err != nil || !strings.HasPrefix(out, "git version") || confined != 1 || cleaned != 1 {
		t.Fatalf("out %q, err %v, confined %d, cleaned %d", out, err, confined, cleaned)
	}

	refuse := ConfinedGit(func(context.Context, *exec.Cmd) (func(), error) { return nil, errors.New("no sandbox") })
	_, err = refuse(t.Context(), "", "fetch", "origin")
	var ge *GitError
	if !errors.As(err, &ge) || err.Error() != "git fetch: no sandbox" {
		t.Fatalf("refused: %v", err)
	}
}
