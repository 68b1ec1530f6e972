// Package publish pushes what the runtime wrote itself back to git:
// runtime-authored skills to AGENT_SKILLS_REPO and the writable knowledge
// base's raw notes to its repository, recording the result in the manifest
// (agent.json) and the lockfile (agent.lock). [Publisher.Sync] is the
// sync_manifest tool.
//
// [Checkout] is the commit-and-push step it shares with /ingest: git runs
// as a command line, so the user's git configuration (credentials,
// url.<base>.insteadOf, identity) applies, and commits fall back to a
// configured author only when git has no identity of its own.
package publish
