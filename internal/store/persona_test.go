package store

import (
	"errors"
	"testing"
)

func TestPersonaCache(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()

	if _, err := s.PersonaCache(ctx, "soul"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PersonaCache on empty store = %v, want ErrNotFound", err)
	}
	for _, data := range []string{"first\x00bytes", "second", ""} {
		if err := s.PutPersonaCache(ctx, "soul", []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := s.PersonaCache(ctx, "soul")
		if err != nil || string(got) != data || got == nil {
			t.Fatalf("PersonaCache after put %q = %q, %v", data, got, err)
		}
	}
}
