package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The recall evaluation: testdata/recall/corpus.txt (multi-session
// conversations between two people, with questions and the turns that
// answer them) is stored through the write path the service uses (a
// session per session, each turn a person's message in its envelope, each
// followed by the persona's answer: a reply tool call, its result and an
// end-of-turn "Noted."), and each question is asked through Recall from a
// new thread of its conversation's channel, as the recall tool asks it.
//
//	go test ./internal/store/ -run '^$' -bench RecallEval -benchtime 1x
//
// reports recall@5, recall@10 and MRR of the evidence turns by question
// kind, and the recalls' latency; with AGENT_TEST_POSTGRES_URL set, on
// Postgres too.

const evalCorpus = "testdata/recall/corpus.txt"

type evalTurn struct {
	author, text, ts string
	at               time.Time
}

type evalQuestion struct {
	kind, text string
	evidence   []string // turn ids "s.n"
}

type evalConversation struct {
	channel  string
	names    map[string]string
	sessions [][]evalTurn
	start    []time.Time
	asks     []evalQuestion
}

// readEvalCorpus parses the corpus; a bad line is an error naming it.
func readEvalCorpus(path string) ([]*evalConversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*evalConversation
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		bad := func(why string) error { return fmt.Errorf("%s:%d: %s", path, n, why) }
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, rest, _ := strings.Cut(line, " ")
		if head != "conversation" && len(out) == 0 {
			return nil, bad("before the first conversation")
		}
		var c *evalConversation
		if len(out) > 0 {
			c = out[len(out)-1]
		}
		switch {
		case head == "conversation":
			f := strings.Fields(rest)
			if len(f) < 3 {
				return nil, bad("conversation: want a channel and two people")
			}
			c = &evalConversation{channel: f[0], names: map[string]string{}}
			for _, p := range f[1:] {
				id, name, ok := strings.Cut(p, "=")
				if !ok {
					return nil, bad("conversation: person " + p + " is not user=name")
				}
				c.names[id] = name
			}
			out = append(out, c)
		case head == "session":
			at, err := time.Parse("2006-01-02T15:04", rest)
			if err != nil {
				return nil, bad("session: " + err.Error())
			}
			c.sessions = append(c.sessions, nil)
			c.start = append(c.start, at)
		case head == "question":
			f := strings.Split(rest, "|")
			if len(f) != 3 {
				return nil, bad("question: want kind | question | evidence")
			}
			q := evalQuestion{kind: strings.TrimSpace(f[0]), text: strings.TrimSpace(f[1]), evidence: strings.Fields(f[2])}
			if !slices.Contains(evalKinds, q.kind) {
				return nil, bad("question: unknown kind " + q.kind)
			}
			if (q.kind == "none") != (len(q.evidence) == 0) {
				return nil, bad("question: evidence goes with every kind but none")
			}
			for _, id := range q.evidence {
				if _, ok := c.turn(id); !ok {
					return nil, bad("question: no turn " + id)
				}
			}
			c.asks = append(c.asks, q)
		default:
			author, text, ok := strings.Cut(line, ": ")
			if !ok || c.names[author] == "" || len(c.sessions) == 0 {
				return nil, bad("not a turn of a session's person")
			}
			s := len(c.sessions) - 1
			i := len(c.sessions[s])
			at := c.start[s].Add(time.Duration(i) * time.Minute)
			c.sessions[s] = append(c.sessions[s], evalTurn{author: author, text: text, at: at,
				ts: fmt.Sprintf("%d.%06d", at.Unix(), i+1)})
		}
	}
	return out, sc.Err()
}

func (c *evalConversation) turn(id string) (evalTurn, bool) {
	s, n, ok := strings.Cut(id, ".")
	si, err1 := strconv.Atoi(s)
	ni, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || si < 1 || si > len(c.sessions) || ni < 1 || ni > len(c.sessions[si-1]) {
		return evalTurn{}, false
	}
	return c.sessions[si-1][ni-1], true
}

var evalKinds = []string{"single", "temporal", "multi", "open", "none"}

// fillerSessions is how many sessions of small talk fillEval adds to each
// conversation around the corpus's own, fillerTurns turns each: the
// everyday talk a long conversation is mostly made of, drawn from
// fillerLines (its words overlap the questions' as such talk does, and
// each session opens with its date, as the corpus's do). They hold no
// evidence.
const (
	fillerSessions = 12
	fillerTurns    = 24
)

var fillerLines = []string{
	"How was your weekend, {name}?", "Pretty quiet, I mostly stayed home and cleaned the flat.",
	"I went to the market on {day} and bought way too many vegetables.", "Work was busy this week, lots of meetings.",
	"Did you watch the match on {day}?", "No, I was too tired, I went to bed at ten.",
	"What are your plans for the holidays?", "Nothing yet, maybe visit family.", "haha", "ok", "yes", "same here",
	"The weather has been terrible, rain every day.", "I finally finished that book you recommended, {name}.",
	"We should have dinner together sometime in {month}.", "Sounds good, let me know when you're free.",
	"My phone broke again, I need a new one.", "I made pasta for dinner, nothing fancy.",
	"Traffic was awful this morning, it took me {n} minutes.", "Did you hear about the new cafe near the station?",
	"I'm trying to go to bed earlier, it's not working.", "Let's talk {day}, I have to run now.",
	"Thanks for asking, {name}, everything is fine.", "I cleaned the balcony and the kitchen today.",
	"My neighbour's name is hard to pronounce, I keep getting it wrong.", "I bought new shoes, {n} euros, on sale.",
	"The train was late again, {n} minutes.", "What time is it there? It's {n} past here.",
	"I need a holiday, maybe in {month}.", "Remember when we met at the old school? So long ago.",
	"{n}", "{n}:30?", "on {day}", "see you", "good night", "lol", "true",
	"I've been watching a series about a detective in the mountains.", "My mum called, she says hi.",
	"The kitchen sink is leaking again, I called the landlord.", "I'm so tired today, {name}.",
}

var (
	fillerDays   = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	fillerMonths = []string{"January", "March", "May", "June", "July", "August", "October", "December"}
)

// withFiller is c with its filler sessions, in time order with its own.
func withFiller(c *evalConversation, seed uint64) (sessions [][]evalTurn) {
	r := rand.New(rand.NewPCG(seed, 7))
	people := slices.Sorted(maps.Keys(c.names))
	first, last := c.start[0], c.start[len(c.start)-1]
	for f := range fillerSessions {
		at := first.Add(time.Duration(r.Int64N(int64(last.Sub(first))))).Truncate(time.Minute)
		turns := []evalTurn{{author: people[f%2], text: at.Format("3:04 pm on 2 January, 2006"), at: at}}
		for i := 1; i < fillerTurns; i++ {
			who := people[(f+i)%2]
			line := strings.NewReplacer("{name}", c.names[people[(f+i+1)%2]], "{day}", fillerDays[r.IntN(len(fillerDays))],
				"{month}", fillerMonths[r.IntN(len(fillerMonths))], "{n}", strconv.Itoa(5+r.IntN(50))).
				Replace(fillerLines[r.IntN(len(fillerLines))])
			turns = append(turns, evalTurn{author: who, text: line, at: at.Add(time.Duration(i) * time.Minute)})
		}
		for i := range turns {
			turns[i].ts = fmt.Sprintf("%d.%06d", turns[i].at.Unix(), 500+i)
		}
		sessions = append(sessions, turns)
	}
	sessions = append(sessions, c.sessions...)
	slices.SortStableFunc(sessions, func(a, b []evalTurn) int { return a[0].at.Compare(b[0].at) })
	return sessions
}

// fillEval stores the corpus as the service would.
func fillEval(tb testing.TB, s *Store, convs []*evalConversation) {
	ctx := tb.Context()
	for ci, c := range convs {
		for si, turns := range withFiller(c, uint64(ci)) {
			root := turns[0]
			sid := NewID()
			if err := s.CreateSession(ctx, Session{ID: sid, ThreadKey: c.channel + ":" + root.ts, CreatedAt: root.at}); err != nil {
				tb.Fatal(err)
			}
			for i, t := range turns {
				user, _ := json.Marshal([]map[string]string{{"type": "text", "text": pipeline.Envelope(t.author, "member", t.text)}})
				call := fmt.Sprintf("tu%d_%d", si, i)
				answer, _ := json.Marshal([]map[string]any{{"type": "tool_use", "id": call, "name": "mcp__agent_chat__reply",
					"input": map[string]string{"text": "Got it, " + c.names[t.author] + "."}}})
				result, _ := json.Marshal([]map[string]any{{"type": "tool_result", "tool_use_id": call,
					"content": []map[string]string{{"type": "text", "text": "posted"}}}})
				noted, _ := json.Marshal([]map[string]string{{"type": "text", "text": "Noted."}})
				if err := s.AppendMessages(ctx, sid, Message{Role: RoleUser, Content: user, CreatedAt: t.at, EventID: "Ev" + t.ts, TS: t.ts}); err != nil {
					tb.Fatal(err)
				}
				if err := s.AppendMessages(ctx, sid,
					Message{Role: RoleAssistant, Content: answer, CreatedAt: t.at},
					Message{Role: RoleUser, Content: result, CreatedAt: t.at},
					Message{Role: RoleAssistant, Content: noted, CreatedAt: t.at}); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if s.pg {
		if _, err := s.db.ExecContext(ctx, "ANALYZE recall"); err != nil {
			tb.Fatal(err)
		}
	}
}

// evalScore is one question kind's figures.
type evalScore struct {
	questions      int
	r5, r10, mrr   float64 // sums over the questions
	hitsOfNone     float64 // sum of hits returned, for questions without an answer
	evidenceTurns  int
	foundInContext int // evidence turns found only as a top-10 hit's adjacent turn
}

type evalResult struct {
	byKind map[string]*evalScore
	took   []time.Duration
}

// found reports whether hit r is turn t: by its ts, or, for a hit
// without one (an index that kept none), by its words.
func found(r memory.Recalled, t evalTurn) bool {
	if r.TS != "" {
		return r.TS == t.ts
	}
	return r.Kind == memory.KindMessage && strings.TrimSpace(r.Snippet) == t.text
}

// runEval asks every question of convs with limit 10.
func runEval(tb testing.TB, s *Store, convs []*evalConversation) evalResult {
	res := evalResult{byKind: map[string]*evalScore{}}
	for _, k := range evalKinds {
		res.byKind[k] = &evalScore{}
	}
	for _, c := range convs {
		for qi, q := range c.asks {
			began := time.Now()
			hits, err := s.Recall(tb.Context(), memory.RecallQuery{Text: q.text, Channel: c.channel, Limit: 10,
				Thread: fmt.Sprintf("1800000000.%06d", qi)})
			res.took = append(res.took, time.Since(began))
			if err != nil {
				tb.Fatal(err)
			}
			sc := res.byKind[q.kind]
			sc.questions++
			if q.kind == "none" {
				sc.hitsOfNone += float64(len(hits))
				continue
			}
			first := 0
			var in5, in10 int
			for _, id := range q.evidence {
				t, _ := c.turn(id)
				sc.evidenceTurns++
				rank := slices.IndexFunc(hits, func(r memory.Recalled) bool { return found(r, t) }) + 1
				if rank == 0 {
					if slices.ContainsFunc(hits, func(r memory.Recalled) bool {
						return slices.ContainsFunc(slices.Concat(r.Before, r.After), func(a memory.Turn) bool { return a.TS == t.ts })
					}) {
						sc.foundInContext++
					}
					continue
				}
				if rank <= 5 {
					in5++
				}
				in10++
				if first == 0 || rank < first {
					first = rank
				}
			}
			n := float64(len(q.evidence))
			sc.r5 += float64(in5) / n
			sc.r10 += float64(in10) / n
			if first > 0 {
				sc.mrr += 1 / float64(first)
			}
		}
	}
	return res
}

// all is the figures over every kind with an answer.
func (r evalResult) all() evalScore {
	var a evalScore
	for _, k := range evalKinds {
		if k == "none" {
			continue
		}
		sc := r.byKind[k]
		a.questions += sc.questions
		a.r5 += sc.r5
		a.r10 += sc.r10
		a.mrr += sc.mrr
		a.evidenceTurns += sc.evidenceTurns
		a.foundInContext += sc.foundInContext
	}
	return a
}

func (r evalResult) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %4s %6s %6s %6s\n", "kind", "n", "r@5", "r@10", "MRR")
	line := func(k string, sc evalScore) {
		n := float64(max(sc.questions, 1))
		if k == "none" {
			fmt.Fprintf(&b, "%-9s %4d  (%.1f hits returned on average)\n", k, sc.questions, sc.hitsOfNone/n)
			return
		}
		fmt.Fprintf(&b, "%-9s %4d %6.3f %6.3f %6.3f\n", k, sc.questions, sc.r5/n, sc.r10/n, sc.mrr/n)
	}
	for _, k := range evalKinds {
		line(k, *r.byKind[k])
	}
	a := r.all()
	line("all", a)
	took := slices.Sorted(slices.Values(r.took))
	fmt.Fprintf(&b, "evidence turns only in a hit's adjacent turns: %d of %d\n", a.foundInContext, a.evidenceTurns)
	fmt.Fprintf(&b, "latency: p50 %v, p99 %v over %d recalls\n", took[len(took)/2], took[len(took)*99/100], len(took))
	return b.String()
}

func loadEval(tb testing.TB) (*Store, []*evalConversation) {
	convs, err := readEvalCorpus(evalCorpus)
	if err != nil {
		tb.Fatal(err)
	}
	s := openAt(tb, testPath(tb), newClock())
	fillEval(tb, s, convs)
	return s, convs
}

// BenchmarkRecallEval reports the evaluation's figures (see above).
func BenchmarkRecallEval(b *testing.B) {
	s, convs := loadEval(b)
	var res evalResult
	for b.Loop() {
		res = runEval(b, s, convs)
	}
	backend := "sqlite"
	if s.pg {
		backend = "postgres"
	}
	b.Logf("%s\n%s", backend, res.table())
	for _, k := range evalKinds[:4] {
		sc := res.byKind[k]
		n := float64(sc.questions)
		b.ReportMetric(sc.r5/n, k+"-r@5")
		b.ReportMetric(sc.r10/n, k+"-r@10")
		b.ReportMetric(sc.mrr/n, k+"-MRR")
	}
	a := res.all()
	b.ReportMetric(a.r5/float64(a.questions), "r@5")
	b.ReportMetric(a.r10/float64(a.questions), "r@10")
	b.ReportMetric(a.mrr/float64(a.questions), "MRR")
	took := slices.Sorted(slices.Values(res.took))
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// TestRecallEval runs the evaluation on the backend of the run and holds
// its figures to floors: recall@10 over every question with an answer at
// least 0.70 (0.435 before issue 39's ranking), and no kind below where
// it was before (single 0.400, temporal 0.636, multi 0.481, open 0.083).
func TestRecallEval(t *testing.T) {
	s, convs := loadEval(t)
	res := runEval(t, s, convs)
	t.Logf("\n%s", res.table())
	a := res.all()
	if r10 := a.r10 / float64(a.questions); r10 < 0.70 {
		t.Errorf("recall@10 = %.3f, want at least 0.70", r10)
	}
	for kind, floor := range map[string]float64{"single": 0.400, "temporal": 0.636, "multi": 0.481, "open": 0.083} {
		sc := res.byKind[kind]
		if r10 := sc.r10 / float64(sc.questions); r10 < floor {
			t.Errorf("%s: recall@10 = %.3f, want at least %.3f", kind, r10, floor)
		}
	}
}
