// Command planted is TestImplementersFindsAPlantedType's input: a command
// that declares types implementing domain interfaces, and some that do not.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
)

// redactor implements pipeline.Redactor by value: reported.
type redactor struct{}

func (redactor) Redact(text string) string { return strings.ToUpper(text) }

// deferrer implements session.Deferrer by pointer: reported.
type deferrer struct{}

func (*deferrer) DeferSession(context.Context, session.Record, func()) (bool, func(), error) {
	return false, nil, nil
}

// almost has Redact with another signature: not reported.
type almost struct{}

func (almost) Redact(text []byte) string { return string(text) }

// generic cannot be checked uninstantiated: reported as such.
type generic[T any] struct{ v T }

func (g generic[T]) Redact(string) string { return fmt.Sprint(g.v) }

type stringer int // implements fmt.Stringer, not a domain interface: not reported

func main() {
	type local struct{ redactor }
	var r pipeline.Redactor = local{}
	fmt.Println(r.Redact("x"), stringer(1), almost{}.Redact(nil), generic[int]{}.Redact(""), new(deferrer))
}

func (s stringer) String() string { return "s" }
