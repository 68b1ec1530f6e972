package persona

import (
	"fmt"
	"slices"
	"strings"
)

// "## Peers" names the other personas (or apps) this persona works with,
// one <@U…> per bullet (interfaces.md, "A team of personas"). A peer's
// message is admitted only when it mentions this persona, with the
// envelope role peer; a peer never gains a person's role.

// peers reads "## Peers": one user id per bullet; a bullet that is not
// one stops the start (a peer is an open door for a bot: it is named
// exactly or not at all). Prose lines are skipped.
func (ps *parser) peers(s section) error {
	for _, it := range items(s.body, false) {
		ref, _, _ := strings.Cut(it.text, ";")
		id, ok := parseUserRef(ref)
		switch {
		case !ok && it.bullet:
			return &ParseError{File: ps.file, Line: it.line,
				Msg: fmt.Sprintf("## Peers: %q is not a user id (want \"- <@U…>\")", strings.TrimSpace(ref))}
		case ok:
			if _, dup := ps.pos[kindPeers+"/"+id]; !dup {
				ps.pos[kindPeers+"/"+id] = len(ps.p.Peers)
				ps.p.Peers = append(ps.p.Peers, id)
			}
		}
	}
	return nil
}

// IsPeer reports whether userID is on the "## Peers" list.
func (p *Persona) IsPeer(userID string) bool {
	return userID != "" && slices.Contains(p.Peers, userID)
}
