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
