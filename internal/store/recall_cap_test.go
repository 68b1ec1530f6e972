package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/persona-runtime/agent/internal/memory"
)

// A query of sixteen words searches for its eight longest alone (issue
// 33: sixteen words just short of common cost ten times a short query),
// on both backends: a memory holding only one of the shorter words is not
// found.
func TestRecallCapsTerms(t *testing.T) {
	const keep = 8
	s, _ := newTestStore(t)
	var words []string
	for i := range 2 * keep {
		w := strings.Repeat(string(rune('a'+i)), 3+i) // "aaa", "bbbb", …: each longer than the one before
		words = append(words, w)
		remember(t, s, dmChan, "U0MGR", memory.ScopeConversation, "note "+w)
	}
	if got := QueryTerms(strings.Join(words, " ")); len(got) != keep {
		t.Errorf("QueryTerms of %d words = %d terms, want %d", len(words), len(got), keep)
	}
	// The query in an order of its own: the longest are kept wherever they are.
	query := slices.Clone(words)
	slices.Reverse(query[:keep])
	query[0], query[len(query)-1] = query[len(query)-1], query[0]
	rs, err := s.Recall(t.Context(), memory.RecallQuery{Text: strings.Join(query, " "), Channel: dmChan, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, r := range rs {
		found = append(found, strings.TrimPrefix(r.Snippet, "note "))
	}
	slices.Sort(found)
	if want := words[keep:]; !slices.Equal(found, want) {
		t.Errorf("recall of %d words found %q, want the memories of the %d longest %q", len(words), found, keep, want)
	}
}

// A recall ranks at most the newest maxCandidates matches, on both
// backends: an old memory matching best is not found behind as many newer
// messages holding its word.
func TestRecallCapsCandidates(t *testing.T) {
	clock := newClock()
	s := openAt(t, testPath(t), clock)
	remember(t, s, dmChan, "U0MGR", memory.ScopeConversation, "zebra zebra zebra crossing")
	clock.Advance(time.Second)
	index(t, s, maxCandidates, func(i int) string { return fmt.Sprintf("a zebra and %d other animals of the plain", i) }, clock.Now().UnixMilli())
	rs := recall(t, s, dmChan, "zebra")
	if len(rs) != 10 || slices.ContainsFunc(rs, func(r memory.Recalled) bool { return r.Kind == memory.KindMemory }) {
		t.Errorf("recall zebra = %q, want ten of the messages: the memory is not among the newest %d matches", snippets(rs), maxCandidates)
	}
}

// On SQLite the words kept hold at most maxWeighed tenths of the index
// between them, the longest counted first: past that budget a word is left
// out, as a common one is, and what holds only it is not found.
func TestRecallWeighBudget(t *testing.T) {
	sqliteOnly(t)
	clock := newClock()
	s := openAt(t, testPath(t), clock)
	const n = 11_000 // a tenth: 1,100 rows
	share := func(i int) string {
		switch i % 10 {
		case 0:
			return "lighthouse" // 1,100 rows: kept, 1,100 left
		case 1:
			return "harbour" // 1,100 rows: kept, nothing left
		case 2:
			return "jetty" // over the budget: left out
		}
		return "sand"
	}
	index(t, s, n, func(i int) string { return fmt.Sprintf("%s %d", share(i), i) }, clock.Now().UnixMilli())
	kept, all, err := s.commonWords(t.Context(), QueryTerms("jetty harbour lighthouse"))
	if err != nil {
		t.Fatal(err)
	}
	if all || !slices.Equal(kept, []string{"lighthouse", "harbour"}) {
		t.Errorf("kept %q (all common %v), want lighthouse and harbour", kept, all)
	}
	for _, r := range recall(t, s, dmChan, "jetty harbour lighthouse") {
		if strings.HasPrefix(r.Snippet, "jetty") {
			t.Errorf("found %q: a word past the budget was searched", r.Snippet)
		}
	}
}

// index adds n messages of dmChan, text(i) each, one a millisecond from at.
func index(t *testing.T, s *Store, n int, text func(int) string, at int64) {
	t.Helper()
	err := s.inTx(t.Context(), func(ctx context.Context, tx bun.Tx) error {
		for i := range n {
			if _, err := s.indexDoc(ctx, tx, doc{kind: memory.KindMessage, ref: "s1", channel: dmChan, threadTS: fmt.Sprintf("%d.1", i),
				scope: memory.ScopeConversation, body: text(i), at: at + int64(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
