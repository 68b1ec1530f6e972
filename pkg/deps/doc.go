// Package deps installs a persona's skills and knowledge bases from its
// manifest (agent.json) and pins what it installed in a lockfile
// (agent.lock), so that a fresh home rebuilt from the two files gets the
// same commits.
//
// The manifest lists skills (from a GitHub source, a legacy git address or
// local-only content), read-only knowledge bases and at most one writable
// knowledge base. The lockfile maps each installed entry to the commit it
// resolved to. An [Installer] fetches everything with the git command line,
// so the user's git configuration (credentials, url.<base>.insteadOf, ssh)
// applies, and lays it out under the runtime home:
//
//	skills/<slug>/        a whole repository checkout, or a copy of a
//	                      repository folder with an .agent-sha marker
//	knowledge/<label>/    a checkout of a knowledge base
//	.cache/deps/          clones of repositories that provide a folder
//
// Every file and directory is replaced atomically: readers see the old
// version or the new one, never a half-written one.
package deps
