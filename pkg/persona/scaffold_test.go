package persona

import (
	"bytes"
	"os"
	"path/filepath"
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

func TestSeed(t *testing.T) {
	home := filepath.Join(t.TempDir(), "new", "home")
	seeded, err := Seed(home)
	if err != nil || !seeded {
		t.Fatalf("first seed: seeded %v, err %v", seeded, err)
	}
	path := filepath.Join(home, "SOUL.md")
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, Scaffold()) {
		t.Fatalf("SOUL.md is not the scaffold (err %v)", err)
	}
	// Once there, SOUL.md is the operator's: never seeded over.
	edited := []byte("# Persona\n\n## Identity\n- Name: Ada\n")
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if seeded, err := Seed(home); err != nil || seeded {
			t.Fatalf("seed over an existing SOUL.md: seeded %v, err %v", seeded, err)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, edited) {
		t.Fatalf("an existing SOUL.md was changed:\n%s", got)
	}
	// Even an empty one.
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "SOUL.md"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if seeded, err := Seed(empty); err != nil || seeded {
		t.Fatalf("seed over an empty SOUL.md: seeded %v, err %v", seeded, err)
	}
}

func TestSeedFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if seeded, err := Seed(file); err == nil || seeded { // the home is a file
		t.Fatalf("seeded %v, err %v; want an error", seeded, err)
	}
}
