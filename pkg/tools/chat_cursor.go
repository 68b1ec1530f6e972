package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The read tools are confined to the turn's own conversation: they take no
// channel, and what they hand the model to come back with (a cursor) names
// the listing it continues. A cursor of another listing (another thread,
// another conversation, another tool) is refused, so that a cursor carried
// from elsewhere (pasted by a person, kept from another thread) reads
// nothing but what this thread may read.

// readCursor is where a listing resumes: the platform's cursor of a page
// and how many of that page's entries were shown (a page cut at
// maxReadChars), for the listing scope names.
type readCursor struct {
	scope    string // "thread:<channel>:<root>", "channel:<channel>", "members:<channel>"
	platform string
	skip     int
}

// String is the cursor as the model sees it: opaque, one word.
func (c readCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.scope + "\x00" + c.platform + "\x00" + strconv.Itoa(c.skip)))
}

// errForeignCursor refuses a cursor this listing did not hand out.
var errForeignCursor = errors.New("cursor refused: it is not one this tool gave for this conversation (these tools read only the conversation of this thread); call again without cursor")

// parseCursor reads a cursor of the listing scope; "" is the first page.
func parseCursor(s, scope string) (readCursor, error) {
	if s == "" {
		return readCursor{scope: scope}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return readCursor{}, errForeignCursor
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) != 3 || parts[0] != scope {
		return readCursor{}, errForeignCursor
	}
	skip, err := strconv.Atoi(parts[2])
	if err != nil || skip < 0 {
		return readCursor{}, errForeignCursor
	}
	return readCursor{scope: scope, platform: parts[1], skip: skip}, nil
}

// confinedFields are what a model reaching for another conversation
// sends; they are refused by name.
var confinedFields = []string{"channel", "channel_id", "thread_ts", "conversation"}

// decodeConfined decodes a read tool's input strictly: an unknown field is
// an error, and a field naming a conversation says why there is none.
func decodeConfined(input json.RawMessage, v any) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name, _ := strconv.Unquote(field)
			for _, f := range confinedFields {
				if name == f {
					return fmt.Errorf("%s refused: these tools read only the conversation of this thread and take no %s", name, name)
				}
			}
			return fmt.Errorf("invalid input: unknown field %s", field)
		}
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}

// validTS reports whether s reads as a message ts ("1700000000.000100").
func validTS(s string) bool {
	sec, frac, _ := strings.Cut(s, ".")
	return sec != "" && len(sec) <= 12 && allDigits(sec) && len(frac) <= 6 && allDigits(frac) &&
		(frac != "" || !strings.Contains(s, "."))
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
