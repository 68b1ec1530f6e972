package redact

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// live answers, for one pattern, the question package regexp has no API
// for: where in a text could a match still begin once more text is
// appended? It runs the pattern's own program (regexp/syntax) as a Pike
// VM over the text, starting a thread at every position as an unanchored
// search does, and keeps every thread that has not failed by the end of
// the text. A thread still running there, or one that reached the end of
// the text and matched (the text that follows may extend the match, or
// give an earlier alternative of the leftmost-first rule the win), is a
// match the future decides; the earliest start of those threads is where
// the undecided part of the text begins. Empty-width assertions at the
// end of the text (\b, $) depend on what follows: they are taken to hold,
// which can only hold back more.
//
// The cost is that of a Pike VM: at most one step per instruction of the
// program per byte of the text, without allocating past the first call.
// A pattern with a literal prefix (-----BEGIN, xoxb-) skips from one
// occurrence of it to the next while no thread is running, so it costs
// about a strings.Index over the text.
type live struct {
	prog   *syntax.Prog // nil: the pattern's source did not compile again
	prefix string
}

// newLive compiles re's source as regexp.Compile does (Perl syntax).
func newLive(re *regexp.Regexp) live {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return live{}
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return live{}
	}
	prefix, _ := prog.Prefix()
	return live{prog: prog, prefix: prefix}
}

// thread is one path through the program: the instruction it waits at
// and the position its match began at.
type thread struct {
	pc    uint32
	start int
}

// queue is the threads at one position, in priority order, at most one
// per instruction. seen is a sparse set of the instructions visited (it
// empties in constant time, as package regexp's queues do).
type queue struct {
	threads []thread
	sparse  []uint32
	dense   []uint32
}

func (q *queue) reset(n int) {
	q.threads, q.dense = q.threads[:0], q.dense[:0]
	if len(q.sparse) != n {
		q.sparse = make([]uint32, n)
	}
}

// visit marks pc and reports whether it was new.
func (q *queue) visit(pc uint32) bool {
	if j := q.sparse[pc]; int(j) < len(q.dense) && q.dense[j] == pc {
		return false
	}
	q.sparse[pc] = uint32(len(q.dense))
	q.dense = append(q.dense, pc)
	return true
}

// add follows the empty transitions from pc and queues the instructions
// that consume a rune or match. The first thread to reach an instruction
// keeps it: threads are added in order of their start, so that one has
// the earliest start, which is all this VM asks about.
func (q *queue) add(p *syntax.Prog, pc uint32, start int, ctx syntax.EmptyOp, atEnd bool) {
	if !q.visit(pc) {
		return
	}
	i := &p.Inst[pc]
	switch i.Op {
	case syntax.InstAlt, syntax.InstAltMatch:
		q.add(p, i.Out, start, ctx, atEnd)
		q.add(p, i.Arg, start, ctx, atEnd)
	case syntax.InstEmptyWidth:
		if atEnd || syntax.EmptyOp(i.Arg)&^ctx == 0 {
			q.add(p, i.Out, start, ctx, atEnd)
		}
	case syntax.InstNop, syntax.InstCapture:
		q.add(p, i.Out, start, ctx, atEnd)
	case syntax.InstMatch, syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		q.threads = append(q.threads, thread{pc, start})
	}
}

// consumes reports whether instruction i consumes r.
func consumes(i *syntax.Inst, r rune) bool {
	switch i.Op {
	case syntax.InstRune1:
		return r == i.Rune[0]
	case syntax.InstRune:
		return i.MatchRune(r)
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return false
}

// from returns the earliest position of text at which a match may begin
// that text does not decide, or len(text) when every match is decided.
// It follows the leftmost-first rule of FindAll as package regexp does:
// once a thread matches, the threads below it in priority and the starts
// after it are dropped; when the threads above it have died too, the
// match is decided and the search goes on at its end.
func (l *live) from(text string, cur, next *queue) int {
	if l.prog == nil {
		return 0
	}
	p, n := l.prog, len(l.prog.Inst)
	cur.reset(n)
	pos, prev := 0, rune(-1)
	matched, matchStart, matchEnd := false, 0, 0
	for {
		if len(cur.threads) == 0 {
			if matched {
				// Decided: search again from its end.
				if matchEnd == matchStart { // an empty match: step past it
					if matchEnd == len(text) {
						return len(text)
					}
					_, w := utf8.DecodeRuneInString(text[matchEnd:])
					matchEnd += w
				}
				pos, matched = matchEnd, false
				prev, _ = utf8.DecodeLastRuneInString(text[:pos])
				if pos == 0 {
					prev = -1
				}
			}
			if l.prefix != "" {
				// Nothing running: a match can only begin where the
				// prefix does, or with a part of it at the very end.
				j := strings.Index(text[pos:], l.prefix)
				if j < 0 {
					return len(text) - partialPrefix(text[pos:], l.prefix)
				}
				if j > 0 {
					pos += j
					prev, _ = utf8.DecodeLastRuneInString(text[:pos])
				}
			}
		}
		atEnd := pos == len(text)
		r, w := rune(-1), 0
		if !atEnd {
			r, w = utf8.DecodeRuneInString(text[pos:])
		}
		if !matched {
			// The new start joins last: the threads stay in order of
			// their start, and of priority.
			cur.add(p, uint32(p.Start), pos, syntax.EmptyOpContext(prev, r), atEnd)
		}
		if atEnd {
			// Whatever still runs, or matched only at the end (where
			// $ and \b were taken to hold), the text to come decides.
			if len(cur.threads) > 0 {
				return cur.threads[0].start
			}
			if matched {
				return matchStart
			}
			return len(text)
		}
		nextAtEnd := pos+w == len(text)
		after := rune(-1)
		if !nextAtEnd {
			after, _ = utf8.DecodeRuneInString(text[pos+w:])
		}
		ctx := syntax.EmptyOpContext(r, after)
		next.reset(n)
		for _, t := range cur.threads {
			i := &p.Inst[t.pc]
			if i.Op == syntax.InstMatch {
				// The best match so far; the threads below it lose.
				matched, matchStart, matchEnd = true, t.start, pos
				break
			}
			if consumes(i, r) {
				next.add(p, i.Out, t.start, ctx, nextAtEnd)
			}
		}
		cur, next = next, cur
		pos, prev = pos+w, r
	}
}

// partialPrefix is the length of the longest proper prefix of prefix that
// s ends with.
func partialPrefix(s, prefix string) int {
	for k := min(len(prefix)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, prefix[:k]) {
			return k
		}
	}
	return 0
}
