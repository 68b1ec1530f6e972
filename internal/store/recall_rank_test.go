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

// indexRows adds messages to the index as the write path does, each body a
// row of conversation channel, thread threadTS, one second apart.
func indexRows(t *testing.T, s *Store, channel, threadTS string, bodies ...string) {
	t.Helper()
	at := s.now().UnixMilli()
	err := s.inTx(t.Context(), func(ctx context.Context, tx bun.Tx) error {
		for i, body := range bodies {
			if _, err := s.indexDoc(ctx, tx, doc{kind: memory.KindMessage, ref: "s" + channel + threadTS, channel: channel,
				threadTS: threadTS, ts: fmt.Sprintf("%s%03d", threadTS, i), author: "U1", scope: memory.ScopeConversation,
				body: body, at: at + int64(i)*1000}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A word's weight is what it tells within the conversation searched: here
// "pottery" is in every other message and "kiln" in one, so the message
// with "kiln" comes first, though another conversation talks of kilns all
// day and of pottery never (over the whole index, "pottery" would be the
// rare word, and the message saying it twice the best).
func TestRecallRanksWithinTheConversation(t *testing.T) {
	s, _ := newTestStore(t)
	var talk []string
	for i := range 20 {
		talk = append(talk, fmt.Sprintf("pottery class number %d was fun", i), fmt.Sprintf("we had lunch at place %d", i))
	}
	indexRows(t, s, trustedChan, "1.1", talk...)
	indexRows(t, s, trustedChan, "2.1", "the kiln at the studio broke", "pottery pottery pottery, I love pottery")
	var kilns []string
	for i := range 300 {
		kilns = append(kilns, fmt.Sprintf("kiln %d fired at 1200 degrees", i))
	}
	indexRows(t, s, allowedChan, "3.1", kilns...)
	rs := recall(t, s, trustedChan, "did the pottery kiln break?")
	if len(rs) == 0 || rs[0].Snippet != "the kiln at the studio broke" {
		t.Fatalf("recall = %q, want the kiln first", snippets(rs))
	}
	if rs[0].TS != "2.1000" || rs[0].ThreadTS != "2.1" || rs[0].Channel != trustedChan || rs[0].Author != "U1" {
		t.Errorf("first = %+v, want its message, thread, channel and author", rs[0])
	}
	for _, r := range rs {
		if r.Channel != trustedChan {
			t.Errorf("found %+v from another conversation", r)
		}
	}
}

// A message of a date or a number alone, or of a word or two, weighs less
// than one that says something with the same words.
func TestRecallWeighsDownDatesAndShortMessages(t *testing.T) {
	s, _ := newTestStore(t)
	indexRows(t, s, trustedChan, "1.1",
		"4:33 pm on 12 July, 2025",
		"in July we finally moved the office to the harbour building, 12 desks",
		"July 12?",
	)
	rs := recall(t, s, trustedChan, "what happened on 12 July?")
	if len(rs) != 3 || !strings.HasPrefix(rs[0].Snippet, "in July we finally") {
		t.Fatalf("recall = %q, want the message that says something first", snippets(rs))
	}
}

// A hit comes with its adjacent turns in its thread: the turns of another
// thread or conversation stored between them are not its context, and
// never shown (the walls are the search's).
func TestRecallAdjacentTurns(t *testing.T) {
	s, _ := newTestStore(t)
	rows := []struct{ channel, thread, body string }{
		{trustedChan, "1.1", "when is the freeze?"},
		{dmChan, "5.1", "my salary review is on Monday"},
		{trustedChan, "9.1", "another thread of the channel"},
		{trustedChan, "1.1", "the freeze starts on the 14th"},
		{trustedChan, "1.1", "thanks"},
		{trustedChan, "1.1", "one more after"},
	}
	for _, r := range rows {
		indexRows(t, s, r.channel, r.thread, r.body)
	}
	rs := recall(t, s, trustedChan, "freeze 14th")
	if len(rs) == 0 || rs[0].Snippet != "the freeze starts on the 14th" {
		t.Fatalf("recall = %q, want the answer first", snippets(rs))
	}
	var before, after []string
	for _, tu := range rs[0].Before {
		before = append(before, tu.Snippet)
	}
	for _, tu := range rs[0].After {
		after = append(after, tu.Snippet)
	}
	if !slices.Equal(before, []string{"when is the freeze?"}) || !slices.Equal(after, []string{"thanks"}) {
		t.Errorf("adjacent turns: before %q, after %q; want the question and the thanks", before, after)
	}
	// Asked in the DM, nothing of the channel, its hits or their turns.
	for _, r := range recall(t, s, dmChan, "freeze salary 14th") {
		if r.Channel != dmChan || len(r.Before)+len(r.After) > 0 {
			t.Errorf("in the DM: %+v", r)
		}
	}
}

// The persona's end-of-turn texts are not indexed, and each envelope a
// message carries is a turn of its own, the last one named by its ts.
func TestIndexTurnsNotChatter(t *testing.T) {
	s, _ := newTestStore(t)
	say(t, s, trustedChan, "100.1", "U0ANN", "the deploy window is Thursday at noon", "Noted, deploy window Thursday.")
	rs := recall(t, s, trustedChan, "deploy window Thursday noted")
	if len(rs) != 1 || rs[0].Author != "U0ANN" || rs[0].TS != "100.1" {
		t.Fatalf("recall = %+v, want the person's message alone, by its ts", rs)
	}
	var stats convStats
	if err := s.queryRow(t.Context(), qStats, trustedChan).Scan(&stats.docs, &stats.words); err != nil || stats != (convStats{1, 7}) {
		t.Errorf("counts = %+v, %v; want one row of seven words", stats, err)
	}
}

// Migration 0018 makes the index again with ts and counts each
// conversation's rows: what was indexed before is found, a memory is
// still forgotten with its row (its row id kept), and the counts are the
// rows'.
func TestRecallTurnsMigration(t *testing.T) {
	ctx := t.Context()
	dbPath := testPath(t)
	c := newClock()
	old, err := open(ctx, dbPath, Options{Clock: c}, migrationsBefore(t, "0018"))
	if err != nil {
		t.Fatal(err)
	}
	at := c.Now().Add(-time.Hour).UnixMilli()
	insert := func(kind, ref, channel, body string) int64 {
		t.Helper()
		if old.pg {
			var id int64
			if err := old.queryRow(ctx, `INSERT INTO recall (kind, ref, channel_id, thread_ts, author, scope, body, created_at)
				VALUES (?, ?, ?, '1.1', 'U1', 'conversation', ?, ?) RETURNING id`, kind, ref, channel, body, at).Scan(&id); err != nil {
				t.Fatal(err)
			}
			return id
		}
		key := chanKey(channel)
		if kind == memory.KindMemory {
			key += " " + memory.KindMemory
		}
		res, err := old.db.ExecContext(ctx, `INSERT INTO recall (body, chan, kind, ref, channel, thread_ts, author, created_at)
			VALUES (?, ?, ?, ?, ?, '1.1', 'U1', ?)`, body, key, kind, ref, channel, at)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	insert(memory.KindMessage, "s1", trustedChan, "filler message one")
	insert(memory.KindMessage, "s1", trustedChan, "the release train leaves on Fridays")
	doc := insert(memory.KindMemory, "maaaaaaab", trustedChan, "we deploy on Tuesdays")
	insert(memory.KindMessage, "s2", dmChan, "a private note")
	if _, err := old.exec(ctx, `INSERT INTO memories (id, text, author, channel_id, thread_ts, scope, created_at, doc)
		VALUES ('maaaaaaab', 'we deploy on Tuesdays', 'U1', ?, '1.1', 'conversation', ?, ?)`, trustedChan, at, doc); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, dbPath, c)
	rs := recall(t, s, trustedChan, "release train deploy")
	if !slices.ContainsFunc(rs, func(r memory.Recalled) bool { return r.Snippet == "the release train leaves on Fridays" && r.TS == "" }) ||
		!slices.ContainsFunc(rs, func(r memory.Recalled) bool { return r.ID == "maaaaaaab" }) {
		t.Fatalf("after the migration: %+v, want the message (no ts) and the memory", rs)
	}
	var st convStats
	if err := s.queryRow(ctx, qStats, trustedChan).Scan(&st.docs, &st.words); err != nil || st != (convStats{3, 13}) {
		t.Errorf("counts after the migration = %+v, %v; want 3 rows of 13 words", st, err)
	}
	if err := s.ForgetMemory(ctx, "maaaaaaab"); err != nil {
		t.Fatal(err)
	}
	if rs := recall(t, s, trustedChan, "deploy Tuesdays"); len(rs) != 0 {
		t.Errorf("forgotten memory still found: %+v", rs)
	}
	if err := s.queryRow(ctx, qStats, trustedChan).Scan(&st.docs, &st.words); err != nil || st != (convStats{2, 9}) {
		t.Errorf("counts after forgetting = %+v, %v; want 2 rows of 9 words", st, err)
	}
}
