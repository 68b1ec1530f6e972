package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// memoryBoost is how much more a memory counts than a message matching as
// well: someone asked for it to be kept.
const memoryBoost = 2.0

// maxTerms caps the words a query searches for. Every word costs a read
// of all the rows holding it (SQLite counts it, commonWords, and BM25
// weighs it; Postgres' GIN index reads its posting list), so a query of
// sixteen words just short of common cost about ten times a three-word
// one (BenchmarkRecall/crafted: p50 48 ms against 4.5 on 110,000 rows;
// 45 against 1.9 on 240,000 in issue 33). A question a person asks has
// fewer content words than eight once QueryTerms drops the function words.
// Of more, the longest are kept: the longer a word, the rarer (Zipf's law
// of abbreviation, measured across languages: Piantadosi, Tily & Gibson,
// PNAS 2011), and a rare word both finds more surely and costs less; the
// choice is made before anything is read, so it costs nothing.
const maxTerms = 8

// Recall searches the memories and the stored messages visible in
// q.Channel (its own, and the persona-wide memories) for any of the words
// of q.Text (at most maxTerms of them, QueryTerms), best first: ranked
// within the conversation (rankCandidates, spread; the same on both
// backends), each message with its ts and its adjacent turns. The visibility rule is part of the search itself, not a filter on
// its results. A query without searchable words finds nothing. A word in
// more than a tenth of the index is left out when the query has others
// (commonWords, commonWordsPG), and of a query of such words alone only
// the newest maxCommonCandidates matches are ranked (otherwise the newest
// maxCandidates); on SQLite the words kept hold at most maxWeighed tenths
// of the index between them: a recall's cost grows little with how common
// or how many its words are.
func (s *Store) Recall(ctx context.Context, q memory.RecallQuery) ([]memory.Recalled, error) {
	if q.Channel == "" {
		return nil, fmt.Errorf("recall: no channel")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	limit = min(limit, 50)
	terms := QueryTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	now := s.now().UnixMilli()
	var out []memory.Recalled
	var err error
	if s.pg {
		out, err = s.recallPG(ctx, terms, q, now, limit)
	} else {
		out, err = s.recallSQLite(ctx, terms, q, now, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	return out, nil
}

// maxCandidates caps the rows a recall ranks: the newest that
// match (rowid order is the order things were stored in), so that ranking
// costs the same however many rows a query's words match. The visibility
// key stays in the MATCH that finds them.
const maxCandidates = 1000

// commonShare: a word found in more than this share of the index's rows
// is common (commonWords). BM25 weighs it little, yet working out that
// weight reads every row holding it: that, not the ranking, is what made
// common words dear.
const commonShare = 10

// maxCommon is how many common words a query of common words alone keeps.
const maxCommon = 3

// maxCommonCandidates caps the rows ranked for a query of common words
// alone (both backends): its words weigh about the same in every row that
// holds them, so recency ranks most of it, and the newest few hundred
// matches hold the best; ranking more costs as much again per row.
const maxCommonCandidates = 200

// qCandidatesSQLite are the newest rows of a MATCH (maxCandidates, or
// maxCommonCandidates for common words alone), which rankCandidates
// ranks: FTS5's own bm25() would weigh the words by the whole index. The
// limit is written into the statement, not bound (see stmt.go).
var (
	qCandidatesSQLite       = candidatesSQLite(maxCandidates)
	qCandidatesSQLiteCommon = candidatesSQLite(maxCommonCandidates)
)

func candidatesSQLite(limit int) string {
	return `SELECT rowid, kind, ref, chan, channel, thread_ts, ts, author, created_at, body
	FROM recall WHERE recall MATCH ?1 AND NOT (kind = 'message' AND thread_ts = ?2)
	ORDER BY rowid DESC LIMIT ` + strconv.Itoa(limit)
}

// qStats is a conversation's counts.
const qStats = `SELECT docs, words FROM recall_stats WHERE channel_id = ?`

// qCountSQLite counts the rows of a MATCH, up to a limit; qSpanSQLite is
// the span of the index's row ids: about its number of rows, read from
// both ends of its rowid order without a scan. The limit follows the
// index's size, so it is bound, behind a unary plus (see stmt.go).
const (
	qCountSQLite = `SELECT count(*) FROM (SELECT 1 FROM recall WHERE recall MATCH ? LIMIT +?)`
	qSpanSQLite  = `SELECT coalesce((SELECT rowid FROM recall ORDER BY rowid DESC LIMIT 1), 0)
		- coalesce((SELECT rowid FROM recall ORDER BY rowid LIMIT 1), 1) + 1`
)

func (s *Store) recallSQLite(ctx context.Context, terms []string, q memory.RecallQuery, now int64, limit int) ([]memory.Recalled, error) {
	// The visibility key is searched with the words: this conversation's
	// rows, and the persona's.
	where := `chan : ("` + chanKey(q.Channel) + `" OR "` + memory.ScopePersona + `")`
	switch q.Kind {
	case memory.KindMemory:
		where += ` AND chan : "` + memory.KindMemory + `"`
	case memory.KindMessage:
		where += ` NOT chan : "` + memory.KindMemory + `"`
	}
	terms, allCommon, err := s.commonWords(ctx, terms)
	if err != nil {
		return nil, err
	}
	candidates := qCandidatesSQLite
	if allCommon {
		candidates = qCandidatesSQLiteCommon
	}
	match := where + ` AND body : ("` + strings.Join(terms, `" OR "`) + `")`
	rows, err := s.query(ctx, candidates, match, q.Thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cs []candidate
	for rows.Next() {
		var c candidate
		var key string
		var at int64
		if err := rows.Scan(&c.id, &c.r.Kind, &c.r.ID, &key, &c.r.Channel, &c.r.ThreadTS, &c.r.TS, &c.r.Author, &at, &c.body); err != nil {
			return nil, err
		}
		c.r.At = fromUnixMilli(at)
		c.r.Scope = memory.ScopeConversation
		if strings.HasPrefix(key, memory.ScopePersona) {
			c.r.Scope = memory.ScopePersona
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return s.best(ctx, cs, terms, q, now, limit)
}

// best ranks cs (rankCandidates, with q.Channel's statistics), lets the
// best pass some of their score to their adjacent turns (spread), and
// returns the first limit, each message with its snippet and its adjacent
// turns.
func (s *Store) best(ctx context.Context, cs []candidate, terms []string, q memory.RecallQuery, now int64, limit int) ([]memory.Recalled, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	var st convStats
	if err := s.queryRow(ctx, qStats, q.Channel).Scan(&st.docs, &st.words); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	rankCandidates(cs, terms, st, now)
	near, err := s.neighbours(ctx, cs[:min(len(cs), spreadFrom)], q)
	if err != nil {
		return nil, err
	}
	cs = spread(cs, near)
	cs = cs[:min(len(cs), limit)]
	// The turns next to the hits spread did not look at.
	var more []candidate
	for _, c := range cs {
		if _, ok := near[c.id]; !ok {
			more = append(more, c)
		}
	}
	moreNear, err := s.neighbours(ctx, more, q)
	if err != nil {
		return nil, err
	}
	maps.Copy(near, moreNear)
	out := make([]memory.Recalled, len(cs))
	for i, c := range cs {
		c.r.Snippet = snippet(c.body, terms)
		finish(&c.r, c.body)
		for _, n := range near[c.id] {
			t := memory.Turn{TS: n.r.TS, Author: n.r.Author, At: n.r.At, Snippet: strings.TrimSpace(snippet(n.body, nil))}
			if n.id < c.id {
				c.r.Before = append(c.r.Before, t)
			} else {
				c.r.After = append(c.r.After, t)
			}
		}
		out[i] = c.r
	}
	return out, nil
}

// snippetWords is how many words a snippet keeps.
const snippetWords = 24

// snippet is body cut to snippetWords words around the first that starts
// like one of terms (the index stems its words: "deploy" finds
// "deployed"), with "…" where it was cut; all of body when it is short.
func snippet(body string, terms []string) string {
	words := strings.Fields(body)
	if len(words) <= snippetWords {
		return body
	}
	hit := 0
find:
	for i, w := range words {
		w = strings.ToLower(strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		for _, t := range terms {
			if stem := t[:min(len(t), max(4, len(t)-2))]; strings.HasPrefix(w, stem) {
				hit = i
				break find
			}
		}
	}
	from := max(0, min(hit-snippetWords/4, len(words)-snippetWords))
	text := strings.Join(words[from:from+snippetWords], " ")
	if from > 0 {
		text = "…" + text
	}
	if from+snippetWords < len(words) {
		text += "…"
	}
	return text
}

// commonWords returns terms without those found in more than one row in
// commonShare of the whole index, unless all of them are (all): then the
// first maxCommon are kept. Each count stops at that share, so counting
// costs less than the weight BM25 would work out for a common word.
//
// The words kept hold at most maxWeighed shares of the index between them
// (the first, the longest, is always kept): BM25 reads every row holding
// a word to weigh it, so eight words each just short of common would cost
// eight common words. They are counted longest first (QueryTerms: the
// longer, the rarer), each only up to what is left of that budget, so the
// counting too stops early; a word past it is left out as a common one is.
func (s *Store) commonWords(ctx context.Context, terms []string) (kept []string, all bool, err error) {
	var rows int64
	if err := s.queryRow(ctx, qSpanSQLite).Scan(&rows); err != nil {
		return nil, false, err
	}
	limit := rows / commonShare
	if limit < maxCandidates {
		return terms, false, nil // a small index: every word is cheap
	}
	budget := limit * maxWeighed
	for _, t := range longestFirst(terms) {
		upTo := min(limit, budget)
		var n int64
		if err := s.queryRow(ctx, qCountSQLite, `body : ("`+t+`")`, upTo+1).Scan(&n); err != nil {
			return nil, false, err
		}
		if n <= upTo {
			kept = append(kept, t)
			budget -= n
		}
	}
	if len(kept) == 0 {
		return terms[:min(len(terms), maxCommon)], true, nil
	}
	return kept, false, nil
}

// maxWeighed is how many commonShare shares of the index the words of a
// SQLite recall may hold between them: as many rows as two words just
// short of common, which a query of two content words may be; the
// crafted query of BenchmarkRecall (eight such words left of sixteen)
// reads about a quarter as much with it.
const maxWeighed = 2

// longestFirst is terms, longest first (of equal length, in their order).
func longestFirst(terms []string) []string {
	out := slices.Clone(terms)
	slices.SortStableFunc(out, func(a, b string) int { return utf8.RuneCountInString(b) - utf8.RuneCountInString(a) })
	return out
}

// qCandidatesPG are the newest matches (maxCandidates, or
// maxCommonCandidates for common words alone), as SQLite's
// (qCandidatesSQLite), for rankCandidates.
var (
	qCandidatesPG       = candidatesPG(maxCandidates)
	qCandidatesPGCommon = candidatesPG(maxCommonCandidates)
)

func candidatesPG(limit int) string {
	return `SELECT r.id, kind, ref, scope, channel_id, thread_ts, ts, author, created_at, body
		FROM recall r, websearch_to_tsquery('english', ?) q
		WHERE r.tsv @@ q AND (r.channel_id = ? OR r.scope = 'persona') AND (? = '' OR r.kind = ?)
			AND NOT (r.kind = 'message' AND r.channel_id = ? AND r.thread_ts = ?)
		ORDER BY r.id DESC LIMIT ` + strconv.Itoa(limit)
}

// qCommonPG returns which of the words (one string, space-separated) are
// common: a lexeme of theirs is among the most common elements of the
// index's tsvector column, found in more than one row in commonShare, as
// the planner's statistics (ANALYZE, autovacuum) last counted. Counting
// the rows holding a word would read them, as ranking it would.
var qCommonPG = `SELECT t FROM unnest(string_to_array(?, ' ')) t
	WHERE EXISTS (
		SELECT 1 FROM pg_stats s,
			unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
		WHERE s.schemaname = current_schema() AND s.tablename = 'recall' AND s.attname = 'tsv'
			AND e.lexeme = ANY (tsvector_to_array(to_tsvector('english', t)))
			AND e.freq > ` + strconv.FormatFloat(1.0/commonShare, 'f', -1, 64) + `)`

// commonWordsPG is commonWords on Postgres, by the planner's statistics
// (an index too small or too new to have them has no common words), for
// one word too; all says that every word is common.
func (s *Store) commonWordsPG(ctx context.Context, terms []string) (kept []string, all bool, err error) {
	rows, err := s.query(ctx, qCommonPG, strings.Join(terms, " "))
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	common := map[string]bool{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, false, err
		}
		common[t] = true
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	for _, t := range terms {
		if !common[t] {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return terms[:min(len(terms), maxCommon)], true, nil
	}
	return kept, false, nil
}

func (s *Store) recallPG(ctx context.Context, terms []string, q memory.RecallQuery, now int64, limit int) ([]memory.Recalled, error) {
	terms, allCommon, err := s.commonWordsPG(ctx, terms)
	if err != nil {
		return nil, err
	}
	query := qCandidatesPG
	if allCommon {
		query = qCandidatesPGCommon
	}
	rows, err := s.query(ctx, query, strings.Join(terms, " or "), q.Channel, q.Kind, q.Kind, q.Channel, q.Thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cs []candidate
	for rows.Next() {
		var c candidate
		var at int64
		if err := rows.Scan(&c.id, &c.r.Kind, &c.r.ID, &c.r.Scope, &c.r.Channel, &c.r.ThreadTS, &c.r.TS, &c.r.Author, &at, &c.body); err != nil {
			return nil, err
		}
		c.r.At = fromUnixMilli(at)
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return s.best(ctx, cs, terms, q, now, limit)
}

// adjacentSpan is how far, in rows of the index, adjacent turns are
// looked for on each side of a hit: the rows between are other threads'
// (stored at the same time).
const adjacentSpan = 4

// qNeighbours are the rows between rowids ?1 and ?2 of session ?3 in
// conversation ?4, messages only, outside the asking thread (?5): the
// same conversation as the hit, so nothing it may not see.
const qNeighbours = `SELECT rowid, ts, author, created_at, body FROM recall
	WHERE rowid BETWEEN ?1 AND ?2 AND ref = ?3 AND channel = ?4 AND kind = 'message' AND thread_ts != ?5
	ORDER BY rowid`

// qNeighboursPG is qNeighbours for many hits at once (their rows' ids
// spliced in: numbers the index gave), and the session of each row.
const qNeighboursPG = `SELECT id, ts, author, created_at, body, ref FROM recall
	WHERE id IN (%s) AND channel_id = ? AND kind = 'message' AND thread_ts != ?
	ORDER BY id`

// neighbours returns, by row id of each message of cs in q.Channel, its
// adjacent turns in its thread: at most memory.AdjacentTurns on each
// side, oldest first, within adjacentSpan rows.
func (s *Store) neighbours(ctx context.Context, cs []candidate, q memory.RecallQuery) (map[int64][]candidate, error) {
	out := map[int64][]candidate{}
	var hits []candidate
	for _, c := range cs {
		if c.r.Kind == memory.KindMessage && c.r.Channel == q.Channel {
			hits = append(hits, c)
		}
	}
	if len(hits) == 0 {
		return out, nil
	}
	read := func(rows *sql.Rows, withRef bool) ([]candidate, error) {
		defer rows.Close()
		var found []candidate
		for rows.Next() {
			var n candidate
			var at int64
			dest := []any{&n.id, &n.r.TS, &n.r.Author, &at, &n.body}
			if withRef {
				dest = append(dest, &n.r.ID)
			}
			if err := rows.Scan(dest...); err != nil {
				return nil, err
			}
			n.r.At = fromUnixMilli(at)
			found = append(found, n)
		}
		return found, rows.Err()
	}
	var all []candidate
	if s.pg {
		ids := make([]string, 0, len(hits)*(2*adjacentSpan+1))
		for _, c := range hits {
			for id := c.id - adjacentSpan; id <= c.id+adjacentSpan; id++ {
				ids = append(ids, strconv.FormatInt(id, 10))
			}
		}
		rows, err := s.query(ctx, fmt.Sprintf(qNeighboursPG, strings.Join(ids, ",")), q.Channel, q.Thread)
		if err != nil {
			return nil, err
		}
		if all, err = read(rows, true); err != nil {
			return nil, err
		}
	}
	for _, c := range hits {
		var near []candidate
		if s.pg {
			for _, n := range all {
				if n.r.ID == c.r.ID && n.id >= c.id-adjacentSpan && n.id <= c.id+adjacentSpan {
					near = append(near, n)
				}
			}
		} else {
			rows, err := s.query(ctx, qNeighbours, c.id-adjacentSpan, c.id+adjacentSpan, c.r.ID, q.Channel, q.Thread)
			if err != nil {
				return nil, err
			}
			if near, err = read(rows, false); err != nil {
				return nil, err
			}
		}
		at := slices.IndexFunc(near, func(n candidate) bool { return n.id >= c.id })
		if at < 0 {
			at = len(near)
		}
		before := near[max(0, at-memory.AdjacentTurns):at]
		after := slices.DeleteFunc(slices.Clone(near[at:]), func(n candidate) bool { return n.id == c.id })
		after = after[:min(len(after), memory.AdjacentTurns)]
		var turns []candidate
		for _, n := range slices.Concat(before, after) {
			n.r.Kind, n.r.ID, n.r.Scope, n.r.Channel, n.r.ThreadTS = memory.KindMessage, c.r.ID, memory.ScopeConversation, c.r.Channel, c.r.ThreadTS
			turns = append(turns, n)
		}
		out[c.id] = turns
	}
	return out, nil
}

// finish gives a memory its whole text (it is short), and a message its
// snippet; a message's ref is its session, not an id a person uses.
func finish(r *memory.Recalled, body string) {
	if r.Kind == memory.KindMemory {
		r.Snippet = body
		return
	}
	r.ID = ""
	r.Snippet = strings.TrimSpace(r.Snippet)
}

// stopwords are words too common to search for (Postgres drops its own),
// made on first use.
var stopwords = sync.OnceValue(func() map[string]bool {
	stopwords := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further
		had has have having he her here hers him his how i if in into is it its itself just me more most my no nor
		not now of off on once only or other our ours out over own same she should so some such than that the their
		theirs them then there these they this those through to too under until up very was we were what when where
		which while who whom why will with would you your yours`) {
		stopwords[w] = true
	}
	return stopwords
})

// QueryTerms are the words Recall searches for in text: lower-cased
// letters and digits, without the commonest English words, each once, in
// the order of text; of more than maxTerms, the maxTerms longest (the
// first of equal length). Nothing of the query's own syntax survives, so a
// query can neither fail to parse nor change what is searched.
func QueryTerms(text string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopwords()[w] || seen[w] || (len(w) < 2 && !unicode.IsDigit([]rune(w)[0])) {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	if len(terms) <= maxTerms {
		return terms
	}
	keep := map[string]bool{}
	for _, t := range longestFirst(terms)[:maxTerms] {
		keep[t] = true
	}
	return slices.DeleteFunc(terms, func(t string) bool { return !keep[t] })
}

// runtimeNote opens the runtime's own text blocks (notes, the lines of the
// memories a first turn carries, memory.Note): they are not what anyone
// said, and are not indexed.
const runtimeNote = "[runtime]"

// part is one turn of a stored message as the index keeps it: one
// envelope's words and author, or the persona's own words (author "").
type part struct {
	body, author string
	envelope     bool
}

// messageParts is what the index keeps of a stored message: the words of
// its text blocks, out of their envelopes, each envelope a turn of its own
// (a message carries the thread's unseen messages before the person's),
// the text blocks of no envelope joined as one. The persona's own words
// are kept only when carried (carried: the thread's posts a turn's input
// holds, stored with its event); its answers' texts (end-of-turn
// acknowledgements: what it posts goes through the reply tool), tool calls
// and results, and the runtime's notes are left out.
func messageParts(role string, content []byte, carried bool) []part {
	if role == RoleAssistant && !carried {
		return nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &blocks); err != nil {
		var s string
		if json.Unmarshal(content, &s) != nil {
			return nil
		}
		blocks = append(blocks, struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", s})
	}
	var parts []part
	var loose strings.Builder
	remembered := false // the block is the words of the memory a memory.Note introduced
	for _, bl := range blocks {
		if remembered {
			remembered = false
			continue
		}
		if bl.Type != "text" || strings.TrimSpace(bl.Text) == "" || strings.HasPrefix(bl.Text, runtimeNote) {
			remembered = bl.Type == "text" && strings.HasPrefix(bl.Text, memory.Note)
			continue
		}
		if role == RoleUser {
			if who, _, words, ok := pipeline.ParseEnvelope(bl.Text); ok {
				if strings.TrimSpace(words) != "" {
					parts = append(parts, part{body: words, author: who, envelope: true})
				}
				continue
			}
		}
		if loose.Len() > 0 {
			loose.WriteByte('\n')
		}
		loose.WriteString(bl.Text)
	}
	if loose.Len() > 0 {
		parts = append(parts, part{body: loose.String()})
	}
	return parts
}

const qSessionThread = "SELECT thread_key FROM sessions WHERE session_id = ?"

// indexMessages adds the turns of rows (of one session) to the index, in
// the transaction that stores them (messageParts); a row's last envelope
// is its message (Message.TS).
func (s *Store) indexMessages(ctx context.Context, tx bun.Tx, rows []messageRow) error {
	var channel, threadTS string
	looked := false
	docs, words := 0, 0
	for _, r := range rows {
		parts := messageParts(r.Role, []byte(r.Content), r.EventID != "")
		last := -1
		for i, p := range parts {
			if p.envelope {
				last = i
			}
		}
		for i, p := range parts {
			if !looked {
				var key string
				if err := s.txQueryRow(ctx, tx, qSessionThread, r.SessionID).Scan(&key); err != nil {
					return fmt.Errorf("index messages: session %s: %w", r.SessionID, err)
				}
				channel, threadTS, _ = strings.Cut(key, ":")
				looked = true
			}
			ts := ""
			if i == last {
				ts = r.TS
			}
			if _, err := s.indexRow(ctx, tx, doc{
				kind: memory.KindMessage, ref: r.SessionID, channel: channel, threadTS: threadTS, ts: ts,
				author: p.author, scope: memory.ScopeConversation, body: p.body, at: r.CreatedAt,
			}); err != nil {
				return err
			}
			docs++
			words += wordCount(p.body)
		}
	}
	if docs == 0 {
		return nil
	}
	return s.countDocs(ctx, tx, channel, docs, words)
}
