// Package redact replaces secrets in text: the runtime's own credential
// values, well-known token formats of the chat platform and the model
// provider, and the operator's patterns from SOUL.md's ## Redaction.
package redact
