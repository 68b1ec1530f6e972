package llm

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// CheckAuth asks the provider whether it takes the credential, with the
// cheapest call there is (the first page of the models list, one model,
// no retry). The error is an *Error: ErrAuth when the credential is
// refused, ErrUnavailable when the provider could not be asked.
func (c *Client) CheckAuth(ctx context.Context) error {
	st := &callState{}
	_, err := c.api.Models.List(withCall(ctx, st), anthropic.ModelListParams{Limit: anthropic.Int(1)},
		option.WithMaxRetries(0))
	if err != nil {
		return c.convert(ctx, "models", st, err)
	}
	return nil
}
