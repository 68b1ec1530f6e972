package persona

import _ "embed"

//go:embed scaffold.md
var scaffold []byte

// Scaffold returns the starter SOUL.md seeded on first boot when there is
// none: every section, with comments saying what goes where. The required
// fields hold Placeholder, so the scaffold fails validation as shipped
// (Missing lists identity.name, manager.userId and mandate) and passes once
// the operator fills them in. The caller owns the returned slice.
func Scaffold() []byte {
	return append([]byte(nil), scaffold...)
}
