package store

import (
	"testing"

	"modernc.org/libc"
)

// TestKeepHeadroom: once a class's kept pages are full, keepHeadroom
// keeps a page more, so that the class's next blocks come from pages
// that stay mapped. The largest class is used: SQLite's own blocks are
// smaller, so the test alone fills it.
func TestKeepHeadroom(t *testing.T) {
	tls := libc.NewTLS()
	defer tls.Close()
	const size = maxClass
	kept := func(p uintptr) bool {
		pinned.Lock()
		defer pinned.Unlock()
		return pinned.pages[p&^pageMask]
	}
	keptPages := func() int {
		pinned.Lock()
		defer pinned.Unlock()
		return len(pinned.pages)
	}
	// Fill the kept pages' room: take the class's blocks until one comes
	// from a page no kept block holds.
	var held []uintptr
	defer func() {
		for _, p := range held {
			libc.Xfree(tls, p)
		}
	}()
	for {
		p := libc.Xmalloc(tls, size)
		if p == 0 {
			t.Fatal("malloc failed")
		}
		if !kept(p) {
			libc.Xfree(tls, p)
			break
		}
		held = append(held, p)
		if len(held) > 1000 {
			t.Fatal("every block came from a kept page")
		}
	}
	before := keptPages()
	keepHeadroom()
	if keptPages() <= before {
		t.Fatalf("kept pages %d → %d: no room was made in a full class", before, keptPages())
	}
	for range headroom(size) {
		p := libc.Xmalloc(tls, size)
		held = append(held, p)
		if !kept(p) {
			t.Errorf("block %#x after keepHeadroom is in a page that may be unmapped", p)
		}
	}
}

func TestHeadroom(t *testing.T) {
	for size, want := range map[libc.Tsize_t]int{16: 32, 512: 32, 1024: 16, 4096: 4, 16384: 2} {
		if got := headroom(size); got != want {
			t.Errorf("headroom(%d) = %d, want %d", size, got, want)
		}
	}
}

// BenchmarkKeepHeadroom is what an in-memory store handed out pays for
// the room, its classes' kept pages having it already.
func BenchmarkKeepHeadroom(b *testing.B) {
	keepHeadroom()
	for b.Loop() {
		keepHeadroom()
	}
}
