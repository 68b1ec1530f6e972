package sandbox

import (
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/fsutil"
)

// tempPrefix starts the name of every command's private temporary
// directory (its TMPDIR), which is held while the command runs
// (fsutil.MkdirHeld).
const tempPrefix = "agent-sbx-"

// tempSweeps holds the roots swept by this process: each is swept once,
// when the first sandbox over it is made (the simulator makes one a
// scenario).
var tempSweeps sync.Map

// sweepTempsOnce removes, unless this process has done so already, the
// private temporary directories under root that runtimes killed
// mid-command left (fsutil.SweepUnheld).
func sweepTempsOnce(root string) {
	if _, done := tempSweeps.LoadOrStore(root, struct{}{}); !done {
		fsutil.SweepUnheld(root, tempPrefix, time.Now())
	}
}
