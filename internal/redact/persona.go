package redact

import "github.com/persona-runtime/agent/pkg/persona"

// PersonaPatterns returns the redaction patterns of p's "## Redaction",
// compiled, each with its description.
func PersonaPatterns(p *persona.Persona) ([]Pattern, error) {
	res, err := p.Compile()
	if err != nil {
		return nil, err
	}
	out := make([]Pattern, 0, len(res))
	for i, re := range res {
		out = append(out, Pattern{Re: re, Description: p.Redactions[i].Description})
	}
	return out, nil
}
