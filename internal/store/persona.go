package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// PersonaCache returns the data stored under key, or an error matching
// ErrNotFound.
func (s *Store) PersonaCache(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := s.queryRow(ctx,
		"SELECT data FROM persona_cache WHERE cache_key = ?", key).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("persona cache %q: %w", key, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// PutPersonaCache stores data under key, replacing what was there.
func (s *Store) PutPersonaCache(ctx context.Context, key string, data []byte) error {
	if data == nil {
		data = []byte{} // the column is NOT NULL; nil and empty read back alike
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, `
			INSERT INTO persona_cache (cache_key, data, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (cache_key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
			key, data, s.now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("put persona cache %q: %w", key, err)
	}
	return nil
}
