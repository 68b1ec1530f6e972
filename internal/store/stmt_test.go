package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// planSteering finds, in a statement's text, a bound parameter that
// steers SQLite's plan: a LIMIT or OFFSET, or the pattern of a LIKE or
// GLOB, given as a bare placeholder (?, ?3).
var planSteering = regexp.MustCompile(`(?i)\b(LIMIT|OFFSET|LIKE|GLOB)\s+\?`)

// TestNoPlanSteeringParameter: no statement of the store binds a value
// that steers SQLite's plan, which would have SQLite prepare it again at
// every run (see stmt.go).
func TestNoPlanSteeringParameter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			checked++
			if m := planSteering.FindString(text); m != "" {
				t.Errorf("%s: %q binds a value SQLite plans with (see stmt.go)", fset.Position(lit.Pos()), m)
			}
			return true
		})
	}
	if checked < 100 {
		t.Fatalf("checked %d string literals: the store's files were not found", checked)
	}
}

func TestPlanSteeringPattern(t *testing.T) {
	for text, want := range map[string]bool{
		"SELECT 1 FROM t LIMIT ?":               true,
		"ORDER BY rowid DESC LIMIT ?3":          true,
		"WHERE event_id like ? AND x":           true,
		"LIMIT ? OFFSET ?":                      true,
		"SELECT 1 FROM t LIMIT +?":              false,
		"ORDER BY rowid LIMIT 1":                false,
		"WHERE substr(event_id, 1, ?) = ?":      false,
		"WHERE name LIKE 'recall%'":             false,
		"ORDER BY last DESC, thread_key LIMIT ": false,
	} {
		if got := planSteering.MatchString(text); got != want {
			t.Errorf("%q: steering %v, want %v", text, got, want)
		}
	}
}
