package store

import (
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// pinOnce keeps one block of SQLite's page-sized allocations alive.
var pinOnce sync.Once

// pinCHeap allocates, once per process and never frees, one block of the
// size class of SQLite's 4 KiB scratch allocations in modernc's C
// allocator (modernc.org/memory), the heap SQLite mallocs from. That
// allocator hands out a class's blocks from 64 KiB pages it maps, and
// unmaps a page as soon as its last block is freed. A statement that
// builds an ephemeral table (a sort, an IN list, RETURNING) opens a
// b-tree of SQLite's default 4 KiB pages and, when it closes it, frees
// that b-tree's scratch space (a page plus SQLite's 8-byte size header:
// the 8 KiB class); with no other block of that class alive, each such
// statement cost an mmap and a munmap (a fifth of the simulator's CPU
// time went to munmap). A pinned block keeps one page of the class
// mapped, and the class's blocks come from it. Pinning the other classes
// too was measured: it saved nothing more. The cost is the page's
// header, and the blocks of the class the page keeps.
func pinCHeap() {
	pinOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		libc.Xmalloc(tls, pinnedClass)
		noBulkPageCache(tls)
	})
}

// pinnedClass is the size of the pinned block: a 4 KiB page plus
// SQLite's header rounds up to the allocator's 8 KiB class.
const pinnedClass = 8 << 10

// noBulkPageCache tells SQLite, before its first connection opens, to
// give a new page cache no bulk allocation of its first pages: by default
// each cache starts with one block of 20 pages, which for the 4 KiB pages
// of a statement's ephemeral b-tree is an 86 KiB block, above the
// allocator's largest class, so mapped and unmapped around each such
// statement. Without it each page is a block of its own class, from the
// allocator's kept pages. (After SQLite's initialisation the call fails,
// changing nothing.)
func noBulkPageCache(tls *libc.TLS) {
	va := libc.NewVaList(uintptr(0), int32(0), int32(0))
	if va == 0 {
		return
	}
	defer libc.Xfree(tls, va)
	sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_PAGECACHE, va)
}

// scratchOnce keeps pages of SQLite's busiest size classes mapped for the
// in-memory stores.
var scratchOnce sync.Once

// scratchPages is how many 64 KiB pages of each pinned class stay mapped.
// A transaction of the simulator's that changes a message and its index
// journals up to about thirty 4 KiB pages, four chunks each; a query that
// sorts (the scheduler's due schedules, the mutes that apply to a
// message) holds an ephemeral b-tree of several pages.
const scratchPages = 4

// journalClass is the size SQLite mallocs for a chunk of an in-memory
// journal (1,024 bytes and its 8-byte header): the allocator's 2 KiB
// class, 31 chunks to a page.
const journalClass = 1024 + 8

// pinScratch keeps scratchPages pages of two of the allocator's classes
// mapped, and one page of each of its other classes, once per process,
// for the in-memory stores (the simulator's, the tests'): the 2 KiB
// class of their rollback journal's chunks (their
// transactions keep the journal in memory) and the 8 KiB class of the
// pages of a statement's ephemeral b-tree (pinnedClass). A transaction
// that journaled more than seven pages, or a statement whose b-tree
// held more than six, filled a second page of the class, mapped before
// and unmapped after: several mmap and munmap pairs per scenario, each
// unmap a TLB shootdown on every core, the classes' churn a tenth of a
// simulation's CPU. It fills the pages with blocks and frees all but one
// of each page, which keep the pages mapped and their blocks on the
// class's free list. The other classes get a kept page each, with room
// (keepHeadroom, which every store the pool hands out runs again):
// a scenario's store, its connection and its statements come and go, and
// each class whose last block they freed was unmapped, to be mapped
// again by the next scenario (the message a turn appends, a row's value
// grown in the VDBE, the page cache's hash). BenchmarkSimScenarios, one
// scenario after another, takes about a quarter less (alternated runs:
// 9.3–9.4 → 6.9–7.3 ms a scenario); `agent sim run`, whose scenarios run
// a few at a time and so keep each other's classes mapped, did not move.
// The cost is one 64 KiB page of address space per class, of which the
// header's 4 KiB are touched until a block is used. A file store in WAL
// mode keeps no rollback journal and a persona runs one query at a time:
// it pins only pinCHeap's block.
func pinScratch() {
	scratchOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		pinPages(tls, journalClass, scratchPages)
		pinPages(tls, pinnedClass, scratchPages)
		keepHeadroom() // the other classes: a kept page each, with its room
	})
}

// The allocator's classes of shared pages: powers of two from 16 bytes to
// 16 KiB (a block of more has a mapping of its own).
const (
	minClass = 16
	maxClass = 16 << 10
)

// pinPages keeps n more pages of the class of size mapped: it allocates
// blocks of that size until they came from n pages not kept yet, keeps
// the first block of each such page and frees the others.
func pinPages(tls *libc.TLS, size libc.Tsize_t, n int) {
	pinned.Lock()
	defer pinned.Unlock()
	var spare []uintptr
	for got := 0; got < n; {
		p := libc.Xmalloc(tls, size)
		if p == 0 {
			break
		}
		if pinned.keep(p) {
			got++
			continue
		}
		spare = append(spare, p)
	}
	for _, p := range spare {
		libc.Xfree(tls, p)
	}
}

// pinned are the allocator's pages that hold a block never freed, which
// keeps them mapped.
var pinned pinnedPages

type pinnedPages struct {
	sync.Mutex
	pages map[uintptr]bool
}

// pageMask masks the allocator's pages, aligned at 64 KiB.
const pageMask = 1<<16 - 1

// keep reports whether p lies in a page no kept block holds yet, and then
// keeps p (its caller never frees it); called with the lock held.
func (k *pinnedPages) keep(p uintptr) bool {
	pg := p &^ pageMask
	if k.pages[pg] {
		return false
	}
	if k.pages == nil {
		k.pages = map[uintptr]bool{}
	}
	k.pages[pg] = true
	return true
}

// keepHeadroom makes sure each of the allocator's classes has room for a
// statement's passing blocks in pages that stay mapped, once per
// in-memory store handed out (InMemoryPool.Get). The blocks a process
// keeps for long (each prepared statement's, past its connection's
// lookaside) fill the pages pinScratch pinned as the pooled stores
// prepare statements; once a class's kept pages are full, every
// statement that needs one more block of it (a cursor: the 512-byte
// class) maps a page and unmaps it at its end, each unmap a TLB
// shootdown on every core. With 253 of the 254 blocks of two pages kept
// by the simulator's statements, one statement more made the shipped
// scenarios two thirds slower (3,394 pages of the 512-byte class mapped
// and unmapped in one pass, from none). It takes headroom(size) blocks
// of each class and keeps the first block of any page not kept yet
// (which gives the class that page's room), freeing the others: the
// kept pages grow with what the process keeps, a page at a time, and a
// class whose kept pages still have the room costs its probe's blocks
// only.
func keepHeadroom() {
	tls := libc.NewTLS()
	defer tls.Close()
	pinned.Lock()
	defer pinned.Unlock()
	var spare []uintptr
	for size := libc.Tsize_t(minClass); size <= maxClass; size <<= 1 {
		spare = spare[:0]
		for range headroom(size) {
			p := libc.Xmalloc(tls, size)
			if p == 0 {
				break
			}
			if !pinned.keep(p) {
				spare = append(spare, p)
			}
		}
		for _, p := range spare {
			libc.Xfree(tls, p)
		}
	}
}

// headroom is how many passing blocks of the class of size keepHeadroom
// makes room for: a quarter of a page's blocks, at least two and at most
// 32 (a statement's cursors and values are a few blocks of a class).
func headroom(size libc.Tsize_t) int {
	return min(32, max(2, (1<<16)/int(size)/4))
}
