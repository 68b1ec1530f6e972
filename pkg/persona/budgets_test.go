package persona

import (
	"strings"
	"testing"
)

func TestBudgetsParsed(t *testing.T) {
	src := "## Budgets\n- Thread: 200k tokens\n- Channel: 1.5M tokens/day\n- **Persona:** 5000000 tokens/day\n- Person: 300k/day\n"
	p, err := Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := Budgets{Thread: 200_000, Channel: 1_500_000, Persona: 5_000_000, Person: 300_000}
	if p.Budgets != want {
		t.Fatalf("budgets = %+v, want %+v", p.Budgets, want)
	}
	if !strings.Contains(p.Summary(), "budgets: thread 200000 tokens, channel 1500000 tokens/day, persona 5000000 tokens/day, person 300000 tokens/day") {
		t.Errorf("summary does not show the budgets:\n%s", p.Summary())
	}
}

// A line that does not read is a warning naming its line, and sets
// nothing.
func TestBudgetsMalformedLinesWarn(t *testing.T) {
	src := "## Budgets\n- Thread: lots tokens\n- Channel: 10k tokens\n- Wallet: 5 tokens/day\n- Persona: 2k tokens/day\n- Person: 5k\n- Person: 1k tokens/day\n"
	p, err := Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Budgets != (Budgets{Persona: 2000, Person: 1000}) {
		t.Fatalf("budgets = %+v, want only the persona's and the person's", p.Budgets)
	}
	lines := map[int]string{}
	for _, w := range p.Warnings {
		lines[w.Line] = w.Text
	}
	for _, n := range []int{2, 3, 4, 6} {
		if !strings.Contains(lines[n], "budget") && !strings.Contains(lines[n], "Budgets") {
			t.Errorf("no budget warning at line %d: %v", n, p.Warnings)
		}
	}
	if _, ok := lines[5]; ok {
		t.Errorf("a good line warned: %v", lines[5])
	}
	if w := lines[6]; !strings.Contains(w, `want "Person: <N>/day"`) || strings.Contains(w, "\n") {
		t.Errorf("the person line's warning = %q", w)
	}
	if _, ok := lines[7]; ok {
		t.Errorf("a good line warned: %v", lines[7])
	}
}
