package store

import (
	"sync"

	"modernc.org/libc"
)

// pinOnce keeps one block of SQLite's page-sized allocations alive.
var pinOnce sync.Once

// pinCHeap allocates, once per process and never frees, one block of the
// size class SQLite's page-sized scratch allocations fall in, in
// modernc's C allocator (modernc.org/memory), the heap SQLite mallocs
// from. That allocator hands out a class's blocks from 64 KiB pages it
// maps, and unmaps a page as soon as its last block is freed. A statement
// whose cursors close frees its b-tree's scratch space (a page, 4 KiB,
// plus SQLite's 8-byte size header: the 8 KiB class) and the next one
// allocates it again: with no other block of that class alive, each
// statement cost an mmap and a munmap (a fifth of the simulator's CPU
// time went to munmap, most statements of a turn paid it). A pinned block
// keeps one page of the class mapped, and the class's blocks come from
// it. The other classes were measured too: pinning them saved nothing.
// The cost is 8 KiB of address space and the page's header.
func pinCHeap() {
	pinOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		libc.Xmalloc(tls, pinnedClass)
	})
}

// pinnedClass is the size of the pinned block: 4 KiB pages plus SQLite's
// header round up to the allocator's 8 KiB class.
const pinnedClass = 8 << 10
