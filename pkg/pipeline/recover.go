package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered from a stage, with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Recover wraps the whole chain and turns a panic anywhere below it into a
// *PanicError, so that no panic reaches the gateway's workers.
func Recover() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, ev *Event) (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = &PanicError{Value: v, Stack: debug.Stack()}
				}
			}()
			return next.Handle(ctx, ev)
		})
	}
}
