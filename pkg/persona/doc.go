// Package persona reads SOUL.md, the operator-authored persona file, into a
// Persona: who the agent is, whom it reports to, where and with whom it may
// talk, who may approve what, and which text it must redact.
//
// Parse is the deterministic, line-oriented parser that interfaces.md makes
// authoritative. It tolerates the ways people write markdown by hand (CRLF,
// odd spacing, "*" bullets, any "# Title", section names in any case, HTML
// comments, fenced code) and never panics. Problems that make the persona
// unusable (an invalid redaction regex, a bad approval timeout, an unknown
// permission mode) are a *ParseError naming the file and line; everything
// else that looks wrong is a Warning, and the required fields that are absent
// are reported by Missing.
//
// A parsed Persona is JSON-serialisable so it can be cached keyed by Hash of
// the source and ParserVersion. After unmarshalling, call Prepare to rebuild
// the lookup sets and compiled patterns. A prepared Persona is read-only and
// safe for concurrent use; its access methods (Layer, RoleOf, IsBlocked, ...)
// do not allocate, because the gateway calls them for every inbound event.
//
// A turn's system prompt is made here, in two parts so that prompt caching
// applies: StaticPrompt, the same for every turn (BaselinePrompt, the
// runtime's own rules, the same in every container; Persona.Prompt, this
// SOUL.md; the skills' list), then ThreadPrompt, the conversation's own
// (who the agent is in the chat, the channel's trust layer and permission
// mode, the workspace, and Persona.ChannelPrompt, a "## Channel" section's
// text).
//
// Seed writes the Scaffold as SOUL.md on first boot, never over a file.
// Loading through the persona cache, and the opt-in model extraction, are
// internal/soulx.
package persona
