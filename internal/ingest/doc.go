// Package ingest runs /ingest: it synthesises the writable knowledge base's
// raw notes (knowledge/<label>/raw/*.md) into its wiki (wiki/*.md) with one
// dedicated model call, commits and pushes wiki/ to the knowledge base's
// repository, and records the new commit as wiki_sha in agent.lock.
//
// One ingest per label runs at a time: the lock is a running row of the
// database's kb_ingest_jobs table, kept alive by a heartbeat, so a run that
// died is expired by the next one instead of blocking /ingest forever.
//
// The model call has no tools, no chat and no approvals: it receives the
// persona's mandate, the README, the raw files and an index of the wiki,
// and answers with the pages to write or delete as JSON. Only clean paths
// wiki/<name>.md are applied; anything else is refused and logged, so the
// answer can never change a file outside wiki/.
package ingest
