package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/persona-runtime/agent/internal/memory"
)

// notFound is ErrNotFound for a feature's row: it matches ErrNotFound and
// the feature's own sentinel (memory.ErrNotFound), and reads as both do.
type notFound struct{ feature error }

func (notFound) Error() string { return ErrNotFound.Error() }

func (e notFound) Is(target error) bool { return target == ErrNotFound || target == e.feature }

// errNoMemory is what Memory and ForgetMemory return for an unknown id.
var errNoMemory error = notFound{memory.ErrNotFound}

// AddMemory stores m and indexes it in one transaction, and returns it as
// stored (its id, its time). A zero CreatedAt means now. A memory its
// rule refuses (memory.Check) is not stored.
func (s *Store) AddMemory(ctx context.Context, m memory.Memory) (memory.Memory, error) {
	if err := memory.Check(m); err != nil {
		return memory.Memory{}, fmt.Errorf("add memory: %w", err)
	}
	if m.ID == "" {
		m.ID = memory.NewID()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.now()
	}
	m.CreatedAt = fromUnixMilli(m.CreatedAt.UnixMilli())
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		doc, err := s.indexDoc(ctx, tx, doc{
			kind: memory.KindMemory, ref: m.ID, channel: m.Channel, threadTS: m.ThreadTS,
			author: m.Author, scope: m.Scope, body: m.Text, at: m.CreatedAt.UnixMilli(),
		})
		if err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, `INSERT INTO memories (id, text, author, channel_id, thread_ts, scope, created_at, doc)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, m.ID, m.Text, m.Author, m.Channel, m.ThreadTS, m.Scope, m.CreatedAt.UnixMilli(), doc)
		return err
	})
	if err != nil {
		return memory.Memory{}, fmt.Errorf("add memory: %w", err)
	}
	return m, nil
}

const memoryColumns = "id, text, author, channel_id, thread_ts, scope, created_at"

// Memory returns the memory id, or an error matching ErrNotFound (and
// memory.ErrNotFound).
func (s *Store) Memory(ctx context.Context, id string) (memory.Memory, error) {
	ms, err := s.memories(ctx, "SELECT "+memoryColumns+" FROM memories WHERE id = ?", id)
	if err == nil && len(ms) == 0 {
		err = errNoMemory
	}
	if err != nil {
		return memory.Memory{}, fmt.Errorf("memory %s: %w", id, err)
	}
	return ms[0], nil
}

// Memories returns the memories of channel and the persona-wide ones,
// oldest first; channel "" returns every memory (the operator's list).
func (s *Store) Memories(ctx context.Context, channel string) ([]memory.Memory, error) {
	var ms []memory.Memory
	var err error
	if channel == "" {
		ms, err = s.memories(ctx, "SELECT "+memoryColumns+" FROM memories ORDER BY created_at, id")
	} else {
		ms, err = s.memories(ctx, "SELECT "+memoryColumns+" FROM memories WHERE channel_id = ? OR scope = ? ORDER BY created_at, id",
			channel, memory.ScopePersona)
	}
	if err != nil {
		return nil, fmt.Errorf("memories: %w", err)
	}
	return ms, nil
}

func (s *Store) memories(ctx context.Context, query string, args ...any) ([]memory.Memory, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ms []memory.Memory
	for rows.Next() {
		var m memory.Memory
		var at int64
		if err := rows.Scan(&m.ID, &m.Text, &m.Author, &m.Channel, &m.ThreadTS, &m.Scope, &at); err != nil {
			return nil, err
		}
		m.CreatedAt = fromUnixMilli(at)
		ms = append(ms, m)
	}
	return ms, rows.Err()
}

// ForgetMemory deletes the memory id and its row of the index in one
// transaction. It returns an error matching ErrNotFound (and
// memory.ErrNotFound) if there is none.
func (s *Store) ForgetMemory(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var doc int64
		var channel, text string
		err := s.txQueryRow(ctx, tx, "SELECT doc, channel_id, text FROM memories WHERE id = ?", id).Scan(&doc, &channel, &text)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoMemory
		}
		if err != nil {
			return err
		}
		if err := s.countDocs(ctx, tx, channel, -1, -wordCount(text)); err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, "DELETE FROM recall WHERE "+s.docKey()+" = ?", doc); err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, "DELETE FROM memories WHERE id = ?", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget memory %s: %w", id, err)
	}
	return nil
}

// docKey is the index's row id column.
func (s *Store) docKey() string {
	if s.pg {
		return "id"
	}
	return "rowid"
}

// doc is one row of the index.
type doc struct {
	kind, ref, channel, threadTS, ts, author, scope, body string
	at                                                    int64
}

// chanKey is a conversation's visibility key in the SQLite index: one
// token whatever the channel id is made of, never "persona".
func chanKey(channel string) string {
	return fmt.Sprintf("k%x", channel)
}

const (
	qIndexSQLite = `INSERT INTO recall (body, chan, kind, ref, channel, thread_ts, ts, author, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qIndexPG     = `INSERT INTO recall (kind, ref, channel_id, thread_ts, ts, author, scope, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	// qCountDoc adds rows (?2: -1 for one removed) of ?3 words between
	// them to conversation ?1's counts.
	qCountDoc = `INSERT INTO recall_stats (channel_id, docs, words) VALUES (?, ?, ?)
		ON CONFLICT (channel_id) DO UPDATE SET docs = recall_stats.docs + excluded.docs, words = recall_stats.words + excluded.words`
)

// countDocs adds n rows of words words between them to channel's counts
// in tx (negative: removed).
func (s *Store) countDocs(ctx context.Context, tx bun.Tx, channel string, n, words int) error {
	if _, err := s.txExec(ctx, tx, qCountDoc, channel, n, words); err != nil {
		return fmt.Errorf("index: counts: %w", err)
	}
	return nil
}

// indexDoc adds d to the index in tx, and to its conversation's counts
// (countDocs), and returns its row id.
func (s *Store) indexDoc(ctx context.Context, tx bun.Tx, d doc) (int64, error) {
	if err := s.countDocs(ctx, tx, d.channel, 1, wordCount(d.body)); err != nil {
		return 0, err
	}
	return s.indexRow(ctx, tx, d)
}

// indexRow adds d to the index in tx, without counting it, and returns
// its row id.
func (s *Store) indexRow(ctx context.Context, tx bun.Tx, d doc) (int64, error) {
	if s.pg {
		var id int64
		err := s.txQueryRow(ctx, tx, qIndexPG, d.kind, d.ref, d.channel, d.threadTS, d.ts, d.author, d.scope, d.body, d.at).Scan(&id)
		if err != nil {
			return 0, fmt.Errorf("index: %w", err)
		}
		return id, nil
	}
	key := chanKey(d.channel)
	if d.scope == memory.ScopePersona {
		key = memory.ScopePersona
	}
	if d.kind == memory.KindMemory {
		key += " " + memory.KindMemory // so a search of memories alone skips the messages
	}
	res, err := s.txExec(ctx, tx, qIndexSQLite, d.body, key, d.kind, d.ref, d.channel, d.threadTS, d.ts, d.author, d.at)
	if err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	return res.LastInsertId()
}
