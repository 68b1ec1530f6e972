package store

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
)

// The template of in-memory databases, migrated ahead of time: a copy of
// the pages the embedded migrations produce (on SQLite, at the in-memory
// page size), made by `go generate ./internal/store`, and the digest of the
// migrations it was made from. A process loads the image instead of running
// the migrations (a few milliseconds of its start against tens), as long
// as the digest is the one of the migrations this binary embeds; a stale
// image is never used (the migrations run as before), and the store's
// tests fail until it is made again.
//
//go:generate go test -run ^TestTemplateImage$ . -args -update-template

var (
	//go:embed template/migrated.sqlite
	templateImage []byte
	//go:embed template/migrations.sha256
	templateImageSum string
)

// migrationsDigest is the hex SHA-256 of what the template is made of: the
// in-memory page size and each embedded SQLite migration's file name and
// text, oldest first.
func migrationsDigest() (string, error) {
	ms, err := readMigrations(embeddedMigrations())
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "page_size %d\n", memPageSize)
	for _, m := range ms {
		fmt.Fprintf(h, "%s %d\n%s\n", m.file, len(m.sql), m.sql)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// errStaleImage is templateFromImage's error when the embedded image was
// made from other migrations than the embedded ones.
var errStaleImage = errors.New("the pre-migrated template is stale: run go generate ./internal/store")

// templateFromImage opens an in-memory store holding the embedded image:
// the image is written to a temporary file, which SQLite copies into the
// store's database page by page (SQLite's backup), then removed. (The
// driver's Deserialize, which would copy it from memory, hands SQLite a
// buffer SQLite cannot free: a store closed after it crashed.)
func templateFromImage(ctx context.Context) (_ *Store, err error) {
	sum, err := migrationsDigest()
	if err != nil {
		return nil, err
	}
	if sum != strings.TrimSpace(templateImageSum) {
		return nil, errStaleImage
	}
	f, err := os.CreateTemp("", "agent-template-*.sqlite")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(templateImage)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	// No migrations: the image brings its own.
	s, err := open(ctx, InMemory, Options{}, noMigrations{})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	s.db.SetMaxOpenConns(1)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	err = conn.Raw(func(dc any) error {
		dst, ok := dc.(interface {
			NewRestore(srcURI string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("driver %T cannot restore a database", dc)
		}
		b, err := dst.NewRestore((&url.URL{Scheme: "file", Path: f.Name(), RawQuery: "mode=ro"}).String())
		if err != nil {
			return err
		}
		more, err := b.Step(-1)
		if err == nil && more {
			err = errors.New("incomplete")
		}
		return errors.Join(err, b.Finish()) // Finish closes the image's connection
	})
	err = errors.Join(err, conn.Close()) // the store's one connection, for what follows
	if err != nil {
		return nil, fmt.Errorf("restore the pre-migrated template: %w", err)
	}
	// The copy is whole, and the migrations are not checked against it:
	// the digest says the image was made from the embedded ones, and
	// TestTemplateImageIsMigrations that it holds what they make. So the
	// template's connection never parses the schema, which only the
	// stores copied from it need (checking took 1–2 ms of each process's
	// first in-memory store: the simulator's start).
	return s, nil
}

// writeTemplateImage migrates a new in-memory database and writes its
// pages to dir/migrated.sqlite and the migrations' digest beside it.
func writeTemplateImage(ctx context.Context, dir string) error {
	sum, err := migrationsDigest()
	if err != nil {
		return err
	}
	s, err := open(ctx, InMemory, Options{}, embeddedMigrations())
	if err != nil {
		return err
	}
	defer s.Close()
	img, err := filepath.Abs(filepath.Join(dir, "migrated.sqlite"))
	if err != nil {
		return err
	}
	// Empty: the copy makes every page. (SQLite opens it, not creates it.)
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		return err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		src, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("driver %T cannot copy a database", dc)
		}
		b, err := src.NewBackup((&url.URL{Scheme: "file", Path: img}).String())
		if err != nil {
			return err
		}
		more, err := b.Step(-1)
		if err == nil && more {
			err = errors.New("incomplete")
		}
		return errors.Join(err, b.Finish())
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", img, err)
	}
	return os.WriteFile(filepath.Join(dir, "migrations.sha256"), []byte(sum+"\n"), 0o644)
}

// noMigrations is a file system without migrations.
type noMigrations struct{}

func (noMigrations) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
