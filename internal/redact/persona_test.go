package redact

import (
	"testing"

	"github.com/persona-runtime/agent/pkg/persona"
)

func TestPersonaPatterns(t *testing.T) {
	p, err := persona.Parse("SOUL.md", []byte("# Persona\n\n## Redaction\n\n- \\b\\d{4}-\\d{4}-\\d{4}-\\d{4}\\b ; card number\n- (?i)password\\s*[:=]\\s*\\S+ ; password\n"))
	if err != nil {
		t.Fatal(err)
	}
	pats, err := PersonaPatterns(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(pats) != 2 || pats[0].Description != "card number" || pats[1].Description != "password" {
		t.Fatalf("patterns = %+v", pats)
	}
	r := New(nil, pats)
	if got, want := r.Redact("pay 1234-5678-9012-3456, Password: hunter2"), "pay [redacted: card number], [redacted: password]"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	none, err := PersonaPatterns(&persona.Persona{})
	if err != nil || len(none) != 0 {
		t.Errorf("no ## Redaction: %v, %v", none, err)
	}
}
