package store

import (
	"context"
	"testing"
)

// BenchmarkOpenMemory is a simulator scenario's database: opened as a
// copy of the template, one write, closed.
func BenchmarkOpenMemory(b *testing.B) {
	ctx := context.Background()
	WarmMemory()
	for b.Loop() {
		s, err := Open(ctx, Memory, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.MarkEvent(ctx, "ev1"); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryPool is BenchmarkOpenMemory through a MemoryPool: the
// store given back emptied and handed out again.
func BenchmarkMemoryPool(b *testing.B) {
	ctx := context.Background()
	WarmMemory()
	var pool MemoryPool
	for b.Loop() {
		s, err := pool.Get(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.MarkEvent(ctx, "ev1"); err != nil {
			b.Fatal(err)
		}
		if err := pool.Put(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}
