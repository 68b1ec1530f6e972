package mrkdwn

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// listJoiner makes one list of adjacent lists that CommonMark keeps apart
// only because their markers differ: a model that starts a list with "-"
// and goes on with "*" (or numbers "1." then "2)") writes one list. The
// joined list is loose if either was or a blank line parted them, as one
// list with a blank line between items would be.
type listJoiner struct{}

var _ parser.ASTTransformer = listJoiner{}

// Transform implements parser.ASTTransformer.
func (listJoiner) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		list, ok := n.(*ast.List)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		for {
			next, ok := list.NextSibling().(*ast.List)
			if !ok || !continues(list, next) {
				break
			}
			list.IsTight = list.IsTight && next.IsTight && !next.HasBlankPreviousLines()
			for item := next.FirstChild(); item != nil; {
				following := item.NextSibling()
				list.AppendChild(list, item) // moves it
				item = following
			}
			list.Parent().RemoveChild(list.Parent(), next)
		}
		return ast.WalkContinue, nil
	})
}

// continues reports whether next goes on with list: both bulleted, or both
// numbered with next's first number following list's last.
func continues(list, next *ast.List) bool {
	if list.IsOrdered() != next.IsOrdered() {
		return false
	}
	return !list.IsOrdered() || next.Start == list.Start+list.ChildCount()
}
