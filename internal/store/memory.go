package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// template is an in-memory database with the embedded migrations applied,
// made once per process: a Memory store starts as a copy of its pages,
// which costs a fraction of running the migrations again (the simulator
// opens one per scenario).
var (
	templateOnce  sync.Once
	templateStore *Store
	templateErr   error
)

func template() (*Store, error) {
	templateOnce.Do(func() {
		s, err := open(context.Background(), Memory, Options{}, embeddedMigrations())
		if err != nil {
			templateErr = err
			return
		}
		s.db.SetMaxOpenConns(1) // one connection, never closed: it keeps the pages alive
		templateStore = s
	})
	return templateStore, templateErr
}

// WarmMemory makes the template of in-memory databases now, so that the
// first Memory stores find it ready (the simulator calls it in the
// background while it reads its scenarios).
func WarmMemory() { _, _ = template() }

// restorer is modernc's connection: it copies a database into its own.
type restorer interface {
	NewRestore(srcURI string) (*sqlite.Backup, error)
}

// restoreTemplate fills this Memory store with the template's pages.
func (s *Store) restoreTemplate(ctx context.Context) error {
	tpl, err := template()
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		r, ok := dc.(restorer)
		if !ok {
			return fmt.Errorf("driver %T cannot restore a database", dc)
		}
		b, err := r.NewRestore(tpl.source)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		more, err := b.Step(-1) // -1: every page; true: pages remain
		if err == nil && more {
			err = errors.New("incomplete")
		}
		if ferr := b.Finish(); err == nil {
			err = ferr
		}
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		return nil
	})
}
