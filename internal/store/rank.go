package store

import (
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/persona-runtime/agent/internal/memory"
)

// Ranking within the conversation searched (issue 39). The index finds
// the candidates (rows of the asking conversation, and persona-wide
// memories, holding any of the query's words); they are ranked here, in
// Go, with BM25 over the conversation's own statistics: its number of
// rows and their mean length (recall_stats), and each word's document
// frequency among the candidates — every row of the conversation holding
// the word is a candidate, so that count is the conversation's, up to the
// candidate cap. The whole index's statistics (every channel, every DM)
// say nothing of how telling a word is here.

// BM25's constants: k1 as FTS5 and most engines set it; b, how much a
// long message is discounted, lower than their 0.75: a chat turn that
// says more is more often the one that answers (the evaluation: r@10
// 0.756 at 0.75, 0.772 at 0.5 and at 0.25, MRR 0.581, 0.618, 0.640).
const (
	bm25K1 = 1.2
	bm25B  = 0.25
)

// candidate is one row the index found, before ranking.
type candidate struct {
	id    int64
	r     memory.Recalled
	body  string
	score float64
}

// convStats are a conversation's counts (recall_stats).
type convStats struct {
	docs, words int64
}

// weak messages: a message of fewer than weakWords content words (not a
// function word, not a number, not a date or time word) counts
// weakFactor of its match; one of none at all (a date line such as
// "4:33 pm on 12 July", a bare number) numberFactor. They match a
// question's words by chance and answer nothing alone.
const (
	weakWords    = 3
	weakFactor   = 0.5
	numberFactor = 0.05
)

// recencyDays is the recency prior's scale: a match this many days old
// counts 1/(1+1) of the same match today, one of twice as old 1/3. Long,
// so that an old fact is not buried by a new mention of its words.
const recencyDays = 365.0

// rankCandidates scores cs for terms (QueryTerms) with st's statistics,
// memories counting memoryBoost times, weak messages less, fading with age
// from now (Unix ms); best first, newest first among equals.
func rankCandidates(cs []candidate, terms []string, st convStats, now int64) {
	stems := make([]string, len(terms))
	for i, t := range terms {
		stems[i] = stem(t)
	}
	type doc struct {
		tf      []int
		length  int
		content int
	}
	docs := make([]doc, len(cs))
	df := make([]int, len(stems))
	var total int64
	for i := range cs {
		d := doc{tf: make([]int, len(stems))}
		forWords(cs[i].body, func(w string) {
			d.length++
			if isContent(w) {
				d.content++
			}
			s := stem(w)
			for j, t := range stems {
				if s == t {
					d.tf[j]++
				}
			}
		})
		for j := range stems {
			if d.tf[j] > 0 {
				df[j]++
			}
		}
		total += int64(d.length)
		docs[i] = d
	}
	n := float64(max(st.docs, int64(len(cs))))
	avg := float64(st.words) / float64(max(st.docs, 1))
	if st.docs == 0 {
		avg = float64(total) / float64(max(len(cs), 1))
	}
	avg = max(avg, 1)
	idf := make([]float64, len(stems))
	for j := range stems {
		idf[j] = math.Log(1 + (n-float64(df[j])+0.5)/(float64(df[j])+0.5))
	}
	for i := range cs {
		d := docs[i]
		score := 0.0
		for j := range stems {
			if tf := float64(d.tf[j]); tf > 0 {
				score += idf[j] * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.length)/avg))
			}
		}
		if cs[i].r.Kind == memory.KindMemory {
			score *= memoryBoost
		} else if d.content == 0 {
			score *= numberFactor
		} else if d.content < weakWords {
			score *= weakFactor
		}
		age := max(0, float64(now-cs[i].r.At.UnixMilli())) / (24 * 3600 * 1000)
		cs[i].score = score / (1 + age/recencyDays)
	}
	sortCandidates(cs)
}

// sortCandidates orders cs best first, newest first among equals.
func sortCandidates(cs []candidate) {
	slices.SortStableFunc(cs, func(a, b candidate) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		if a.id > b.id {
			return -1
		}
		if a.id < b.id {
			return 1
		}
		return 0
	})
}

// forWords calls f with each word of text, lower-cased: its runs of
// letters and digits.
func forWords(text string, f func(string)) {
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f(strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		f(strings.ToLower(text[start:]))
	}
}

// wordCount is how many words text has (forWords).
func wordCount(text string) int {
	n := 0
	forWords(text, func(string) { n++ })
	return n
}

// dateWords are the words of dates and times, which say when, not what:
// made on first use (a process that never indexes or recalls a word never
// holds them).
var dateWords = sync.OnceValue(func() map[string]bool {
	dateWords := map[string]bool{}
	for _, w := range strings.Fields(`am pm january february march april may june july august september october november
		december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday
		sunday today yesterday tomorrow ok okay yes yeah yep no nope thanks thank haha lol hi hey bye`) {
		dateWords[w] = true
	}
	return dateWords
})

// isContent reports whether w (lower-cased) is a word that says what a
// message is about: not a function word, a number, or a date, time or
// courtesy word.
func isContent(w string) bool {
	if stopwords()[w] || dateWords()[w] {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return len(w) > 1
		}
	}
	return false
}

// stem is w without its commonest English inflections, so that a word of
// the query and a word of a message that differ only by them compare
// equal (the index's own stemmer found the message; this one only counts
// its words). Light, and the same on both sides.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ed"):
		w = w[:n-2]
	case n > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes")):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		w = w[:n-1]
	}
	if n := len(w); n > 3 && strings.HasSuffix(w, "e") {
		w = w[:n-1]
	}
	return w
}

// An answer is often the turn after the one that matches (a question and
// its reply: "when is the deadline?" "the first of July"), or the one
// before: the spreadFrom best candidates pass spreadShare of their score
// to each adjacent turn, and questionShare to the turn after a question.
const (
	spreadFrom    = 20
	spreadShare   = 0.2
	questionShare = 0.8
)

// spread adds to cs (ranked) the largest share of a score the first
// spreadFrom pass to each of their adjacent turns (the largest, not the
// sum: a turn between two matches is not worth more than the matches) (near, by row id), adjacent
// turns that are not candidates joining them, and ranks them again.
func spread(cs []candidate, near map[int64][]candidate) []candidate {
	at := make(map[int64]int, len(cs))
	for i, c := range cs {
		at[c.id] = i
	}
	gain := map[int64]float64{}
	for _, c := range cs[:min(len(cs), spreadFrom)] {
		question := strings.HasSuffix(strings.TrimSpace(c.body), "?")
		for _, n := range near[c.id] {
			share := spreadShare
			if question && n.id > c.id {
				share = questionShare
			}
			gain[n.id] = max(gain[n.id], share*c.score)
			if _, ok := at[n.id]; !ok {
				n.score = 0
				at[n.id] = len(cs)
				cs = append(cs, n)
			}
		}
	}
	for id, g := range gain {
		cs[at[id]].score += g
	}
	sortCandidates(cs)
	return cs
}
