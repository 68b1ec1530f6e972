package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
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

// backuper is modernc's connection: it copies its database into another.
type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// copyTemplate copies the template into the in-memory database name (the
// memdb VFS's shared name) through a connection of its own, which it
// returns: the database lives while that connection is open. The copy is
// made from the template's open connection, and into a connection opened
// without pragmas, so that neither parses the schema.
func copyTemplate(ctx context.Context, name string) (io.Closer, error) {
	tpl, err := template()
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	conn, err := tpl.db.Conn(ctx) // the template's one connection: copies queue here
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	defer conn.Close()
	var keep io.Closer
	err = conn.Raw(func(dc any) error {
		src, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("driver %T cannot copy a database", dc)
		}
		// A page cache of 8 pages for the copy: the pages it writes are
		// recycled, where a cache of SQLite's default size allocated each
		// of them (one mmap apiece in modernc's allocator).
		b, err := src.NewBackup((&url.URL{Scheme: "file", Path: name, RawQuery: "vfs=memdb&_pragma=cache_size(8)"}).String())
		if err != nil {
			return err
		}
		more, err := b.Step(-1) // -1: every page; true: pages remain
		if err == nil && more {
			err = errors.New("incomplete")
		}
		if err != nil {
			return errors.Join(err, b.Finish()) // Finish closes the copy
		}
		dst, err := b.Commit()
		if err != nil {
			return err
		}
		keep = dst
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copy the template: %w", err)
	}
	return keep, nil
}

// closeKeeper closes c, if any.
func closeKeeper(c io.Closer) error {
	if c == nil {
		return nil
	}
	return c.Close()
}
