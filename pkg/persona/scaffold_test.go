package persona

import (
	"slices"
	"strings"
	"testing"
)

func TestScaffoldAsShipped(t *testing.T) {
	p, err := Parse("SOUL.md", Scaffold())
	if err != nil {
		t.Fatalf("the scaffold does not parse: %v", err)
	}
	want := []string{"identity.name", "manager.userId", "mandate"}
	if got := p.Missing(); !slices.Equal(got, want) {
		t.Fatalf("Missing() = %q, want %q", got, want)
	}
	for _, w := range p.WarningLines() {
		if strings.Contains(w, "handle") {
			t.Errorf("the placeholder manager is reported as a handle: %s", w)
		}
	}
	if p.ApprovalTimeoutSeconds != DefaultApprovalTimeout {
		t.Errorf("approval timeout = %d", p.ApprovalTimeoutSeconds)
	}
}

func TestScaffoldFilledIn(t *testing.T) {
	filled := strings.NewReplacer(
		"- Name: REPLACE_ME", "- Name: Ada",
		"- Manager: REPLACE_ME", "- Manager: U024BE7LH",
		"- REPLACE_ME: what you own", "- Owns the release calendar.",
		"- REPLACE_ME: what you refuse", "- Refuses to deploy on Fridays.",
	).Replace(string(Scaffold()))
	p, err := Parse("SOUL.md", []byte(filled))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Missing(); len(m) != 0 {
		t.Fatalf("Missing() = %q after filling in", m)
	}
	if p.Identity.Name != "Ada" || p.Manager.UserID != "U024BE7LH" {
		t.Fatalf("identity %+v, manager %+v", p.Identity, p.Manager)
	}
	// The commented examples stay out of the persona.
	if len(p.Approvers)+len(p.Trusted)+len(p.Allowed)+len(p.Redactions)+len(p.Blocked)+len(p.Channels)+len(p.Extra) != 0 {
		t.Fatalf("commented examples leaked into the persona: %s", mustJSON(t, p))
	}
	want := []string{"SOUL.md: anyone in the workspace can DM the persona: both ## Trusted channels and ## Allowed channels are empty"}
	if got := p.WarningLines(); !slices.Equal(got, want) {
		t.Fatalf("warnings = %q, want %q", got, want)
	}
}

// TestScaffoldExamples uncomments the scaffold's examples: as written
// there, they must parse without warnings about their syntax.
func TestScaffoldExamples(t *testing.T) {
	for _, ex := range []string{
		"## Trusted channels\n- <#C0123456789|team>\n",
		"## Allowed channels\n- <#C0123456789|help>\n",
		"## Approvers\n- <@U0123456789>: Bash, Write ; deploys\n- <@U0123456780>: anything\n",
		"## Redaction\n- \\b\\d{4}-\\d{4}-\\d{4}-\\d{4}\\b ; card number\n",
		"## Blocked\n- <@U0123456789> ; reason\n",
		"## Reporting\n- Manager handle: alice\n- Backup manager: U024BE7LJ\n",
		"## Channel <#C0123456789|team>\n\n- Mode: ask\nAnswer in the team's language.\n",
	} {
		if !strings.Contains(string(Scaffold()), strings.SplitN(ex, "\n", 3)[1]) {
			t.Errorf("the scaffold no longer shows %q", strings.SplitN(ex, "\n", 3)[1])
		}
		p, err := Parse("SOUL.md", []byte(ex))
		if err != nil {
			t.Fatalf("%q: %v", ex, err)
		}
		for _, w := range p.Warnings {
			if w.Line > 0 {
				t.Errorf("%q: warning %s", ex, w.Text)
			}
		}
	}
}

func TestScaffoldIsACopy(t *testing.T) {
	a := Scaffold()
	a[0] = 'X'
	if Scaffold()[0] == 'X' {
		t.Fatal("Scaffold returns shared bytes")
	}
}
