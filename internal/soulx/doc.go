// Package soulx is the opt-in model extraction of SOUL.md (interfaces.md,
// "Persona extraction": AGENT_SOUL_EXTRACT=model, model AGENT_SOUL_MODEL).
//
// persona.Parse is authoritative. When it could not find what the operator
// wrote in free prose ("Alice (U0ALICE) is my manager"), Extract asks a model
// for the missing fields as a JSON object and fills in only the fields the
// parser left empty; a field the parser found is never replaced.
//
// The model is not trusted with identities: every user and channel id it
// returns must appear, as a whole word, in the text of the file the parser
// reads (HTML comments removed, so the scaffold's examples do not count), or
// the whole extraction is rejected. A model must never invent who may
// approve. Any failure (a model error, an answer without valid JSON, an
// invented or malformed id, an implausible approver scope) is an error: the
// caller treats it as a load failure, as validate-soul's exit 2.
//
// An Extractor (NewExtractor: from the parsed configuration, nil when the
// extraction is off) runs Extract for the service's boot and validate-soul.
//
// The persona cache is here too: Load parses SOUL.md (persona.Parse, then
// the Extractor) only when the Cache has no entry under CacheKey, which
// names the parser's version, the extraction's and its model, and the file's
// content hash, so an edited SOUL.md or another model misses. The store's
// persona_cache is the Cache across boots; Shared is the process's own, for
// the simulator's in-memory stores.
//
// Nothing here reads the environment.
package soulx
