package store

import (
	"context"
	"testing"
)

// BenchmarkOpenInMemory is a simulator scenario's database: opened as a
// copy of the template, one write, closed.
func BenchmarkOpenInMemory(b *testing.B) {
	ctx := context.Background()
	WarmMemory()
	for b.Loop() {
		s, err := Open(ctx, InMemory, Options{})
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

// BenchmarkInMemoryPool is BenchmarkOpenInMemory through a InMemoryPool: the
// store given back emptied and handed out again.
func BenchmarkInMemoryPool(b *testing.B) {
	ctx := context.Background()
	WarmMemory()
	var pool InMemoryPool
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
