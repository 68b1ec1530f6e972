package golden

import (
	"fmt"
	"strings"
)

// renamer gives the run's ids and timestamps stable names in order of
// first appearance: threads t1, t2, …, messages m1, m2, …, cards ap1, ….
type renamer struct {
	threads, msgs, cards map[string]string
	replace              []string // old, new pairs for free text
	// replacer replaces the first replaced pairs of replace: built again
	// only once a message has been named since (a transcript's texts
	// outnumber its messages).
	replacer *strings.Replacer
	replaced int
}

func newRenamer() *renamer {
	return &renamer{threads: map[string]string{}, msgs: map[string]string{}, cards: map[string]string{}}
}

func (n *renamer) name(m map[string]string, prefix, id string) string {
	if id == "" {
		return ""
	}
	if v, ok := m[id]; ok {
		return v
	}
	v := fmt.Sprintf("%s%d", prefix, len(m)+1)
	m[id] = v
	if prefix == "m" {
		n.replace = append(n.replace, id, v)
	}
	return v
}

func (n *renamer) thread(root string) string {
	if root == "" {
		return "top"
	}
	return n.name(n.threads, "t", root)
}

func (n *renamer) msg(ts string) string { return n.name(n.msgs, "m", ts) }

// text replaces the timestamps named so far in s.
func (n *renamer) text(s string) string {
	if len(n.replace) == 0 {
		return s
	}
	if n.replaced != len(n.replace) {
		n.replacer, n.replaced = strings.NewReplacer(n.replace...), len(n.replace)
	}
	return n.replacer.Replace(s)
}
