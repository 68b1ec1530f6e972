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

// Amounts in dollars sit beside token caps of the same key; a dollar
// line that does not read warns with its line and sets nothing.
func TestBudgetsInDollars(t *testing.T) {
	src := "## Budgets\n- Channel: 100k tokens/day\n- Channel: $5/day\n- Persona: $50/day\n- Schedule: $0.25/run\n" +
		"- Thread: $3\n- Schedule: $1/day\n- Persona: $-2/day\n"
	p, err := Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := Budgets{Channel: 100_000, ChannelUSD: 5, PersonaUSD: 50, ScheduleUSD: 0.25}
	if p.Budgets != want {
		t.Fatalf("budgets = %+v, want %+v", p.Budgets, want)
	}
	lines := map[int]string{}
	for _, w := range p.Warnings {
		lines[w.Line] = w.Text
	}
	for n, want := range map[int]string{6: "dollars are for", 7: `want "Schedule: $N/run"`, 8: `want "Persona: $N/day"`} {
		if !strings.Contains(lines[n], want) {
			t.Errorf("line %d: warning %q, want one containing %q (all: %v)", n, lines[n], want, p.Warnings)
		}
	}
	for _, n := range []int{2, 3, 4, 5} {
		if w, ok := lines[n]; ok {
			t.Errorf("a good line %d warned: %s", n, w)
		}
	}
	if !strings.Contains(p.Summary(), "budgets: channel 100000 tokens/day, channel $5.00/day, persona $50.00/day, schedule $0.25/run") {
		t.Errorf("summary does not show the dollar budgets:\n%s", p.Summary())
	}
}

func TestFormatUSD(t *testing.T) {
	for v, want := range map[float64]string{5: "$5.00", 0.5: "$0.50", 0.005: "$0.005", 1234.56: "$1234.56"} {
		if got := FormatUSD(v); got != want {
			t.Errorf("FormatUSD(%v) = %q, want %q", v, got, want)
		}
	}
}
