package persona

import (
	"fmt"
	"strings"
	"testing"
)

// "## Loading messages": one message per bullet (a wrapped bullet is one),
// prose warned, past ten warned and ignored.
func TestParseLoadingMessages(t *testing.T) {
	var b strings.Builder
	b.WriteString("## Loading messages\n- Reading the calendar, then\n  the notes…\nThinking hard.\n")
	for i := range 10 {
		fmt.Fprintf(&b, "- m%d\n", i)
	}
	p, err := Parse("SOUL.md", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Reading the calendar, then the notes…", "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"}
	eq(t, "loading", p.LoadingMessages, want)
	warned(t, p, `:4: line in "## Loading messages" ignored`)
	warned(t, p, ":14: loading message ignored: the platform rotates at most 10")
	if q, _ := Parse("SOUL.md", []byte("## Loading message\n- one\n")); len(q.LoadingMessages) != 1 {
		t.Errorf("the singular heading: %q", q.LoadingMessages)
	}
}
