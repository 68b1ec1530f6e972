package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Memory scopes.
const (
	// ScopeConversation is recalled only in the channel or DM it came from.
	ScopeConversation = "conversation"
	// ScopePersona is recalled everywhere.
	ScopePersona = "persona"
)

// MaxMemoryLen is the longest memory text, in characters.
const MaxMemoryLen = 2000

// Kinds of what Recall finds.
const (
	KindMemory  = "memory"
	KindMessage = "message"
)

// Memory is a short text a person asked the persona to keep across threads.
type Memory struct {
	ID        string // "m" and 8 letters or digits; NewMemoryID when empty
	Text      string
	Author    string // the user who asked for it
	Channel   string // the conversation it came from
	ThreadTS  string // the thread it came from
	Scope     string // ScopeConversation or ScopePersona
	CreatedAt time.Time
}

// Recalled is one thing Recall found: a memory or a stored message.
type Recalled struct {
	Kind     string // KindMemory or KindMessage
	ID       string // the memory's id; "" for a message
	Scope    string
	Channel  string // with ThreadTS, the thread's permalink
	ThreadTS string
	Author   string // "" for the persona's own words
	At       time.Time
	Snippet  string
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewMemoryID returns a random memory id: "m" and 8 characters.
func NewMemoryID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "m" + idEncoding.EncodeToString(b[:])
}

// ValidMemoryID reports whether id has NewMemoryID's shape.
func ValidMemoryID(id string) bool {
	if len(id) != 9 || id[0] != 'm' {
		return false
	}
	_, err := idEncoding.DecodeString(id[1:])
	return err == nil
}

func validMemory(m Memory) error {
	switch {
	case strings.TrimSpace(m.Text) == "":
		return errors.New("empty text")
	case len([]rune(m.Text)) > MaxMemoryLen:
		return fmt.Errorf("text longer than %d characters", MaxMemoryLen)
	case m.Scope != ScopeConversation && m.Scope != ScopePersona:
		return fmt.Errorf("invalid scope %q", m.Scope)
	case m.Channel == "":
		return errors.New("no channel")
	}
	return nil
}

// AddMemory stores m and indexes it in one transaction, and returns it as
// stored (its id, its time). A zero CreatedAt means now.
func (s *Store) AddMemory(ctx context.Context, m Memory) (Memory, error) {
	if err := validMemory(m); err != nil {
		return Memory{}, fmt.Errorf("add memory: %w", err)
	}
	if m.ID == "" {
		m.ID = NewMemoryID()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.now()
	}
	m.CreatedAt = fromUnixMilli(m.CreatedAt.UnixMilli())
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		doc, err := s.indexDoc(ctx, tx, doc{
			kind: KindMemory, ref: m.ID, channel: m.Channel, threadTS: m.ThreadTS,
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
		return Memory{}, fmt.Errorf("add memory: %w", err)
	}
	return m, nil
}

const memoryColumns = "id, text, author, channel_id, thread_ts, scope, created_at"

// Memory returns the memory id, or an error matching ErrNotFound.
func (s *Store) Memory(ctx context.Context, id string) (Memory, error) {
	ms, err := s.memories(ctx, "SELECT "+memoryColumns+" FROM memories WHERE id = ?", id)
	if err == nil && len(ms) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Memory{}, fmt.Errorf("memory %s: %w", id, err)
	}
	return ms[0], nil
}

// Memories returns the memories of channel and the persona-wide ones,
// oldest first; channel "" returns every memory (the operator's list).
func (s *Store) Memories(ctx context.Context, channel string) ([]Memory, error) {
	var ms []Memory
	var err error
	if channel == "" {
		ms, err = s.memories(ctx, "SELECT "+memoryColumns+" FROM memories ORDER BY created_at, id")
	} else {
		ms, err = s.memories(ctx, "SELECT "+memoryColumns+" FROM memories WHERE channel_id = ? OR scope = ? ORDER BY created_at, id",
			channel, ScopePersona)
	}
	if err != nil {
		return nil, fmt.Errorf("memories: %w", err)
	}
	return ms, nil
}

func (s *Store) memories(ctx context.Context, query string, args ...any) ([]Memory, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ms []Memory
	for rows.Next() {
		var m Memory
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
// transaction. It returns an error matching ErrNotFound if there is none.
func (s *Store) ForgetMemory(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var doc int64
		err := s.txQueryRow(ctx, tx, "SELECT doc FROM memories WHERE id = ?", id).Scan(&doc)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
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
	kind, ref, channel, threadTS, author, scope, body string
	at                                                int64
}

// chanKey is a conversation's visibility key in the SQLite index: one
// token whatever the channel id is made of, never "persona".
func chanKey(channel string) string {
	return fmt.Sprintf("k%x", channel)
}

const (
	qIndexSQLite = `INSERT INTO recall (body, chan, kind, ref, channel, thread_ts, author, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qIndexPG     = `INSERT INTO recall (kind, ref, channel_id, thread_ts, author, scope, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
)

// indexDoc adds d to the index in tx and returns its row id.
func (s *Store) indexDoc(ctx context.Context, tx bun.Tx, d doc) (int64, error) {
	if s.pg {
		var id int64
		err := s.txQueryRow(ctx, tx, qIndexPG, d.kind, d.ref, d.channel, d.threadTS, d.author, d.scope, d.body, d.at).Scan(&id)
		if err != nil {
			return 0, fmt.Errorf("index: %w", err)
		}
		return id, nil
	}
	key := chanKey(d.channel)
	if d.scope == ScopePersona {
		key = ScopePersona
	}
	if d.kind == KindMemory {
		key += " " + KindMemory // so a search of memories alone skips the messages
	}
	res, err := s.txExec(ctx, tx, qIndexSQLite, d.body, key, d.kind, d.ref, d.channel, d.threadTS, d.author, d.at)
	if err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	return res.LastInsertId()
}
