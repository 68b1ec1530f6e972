// Package ingest runs /ingest: a confined sub-agent synthesises the
// writable knowledge base's raw notes (knowledge/<label>/raw/*.md) into its
// wiki (wiki/*.md); then wiki/ is committed and pushed to the knowledge
// base's repository and the new commit recorded as wiki_sha in agent.lock.
//
// One ingest per label runs at a time: the lock is a running row of the
// database's kb_ingest_jobs table, kept alive by a heartbeat, so a run that
// died is expired by the next one instead of blocking /ingest forever.
//
// The sub-agent runs the same tool-use loop as a turn, at most 30 model
// calls, with no chat, no approvals and no Bash: LS, Glob, Grep and Read
// over the knowledge base, and Write and Edit only for wiki/<name>.md, each
// opened through a root of the knowledge base (kbtools.go), so nothing it
// does reaches outside it. Its prompt carries the persona's mandate, the
// README, the raw files by name and size and the wiki's index; it reads
// what it needs. A failed run discards what it wrote.
package ingest
