package secret

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

const token = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"

// wrap breaks s into lines of width, joined by sep.
func wrap(s string, width int, sep string) string {
	var lines []string
	for len(s) > width {
		lines = append(lines, s[:width])
		s = s[width:]
	}
	return strings.Join(append(lines, s), sep)
}

func TestSetFindsEveryForm(t *testing.T) {
	set := New(token, "short", "")
	b64 := func(prefix string) string { return base64.StdEncoding.EncodeToString([]byte(prefix + token + "\n")) }
	hexed := hex.EncodeToString([]byte(token + "\n"))
	for name, shown := range map[string]string{
		"raw":                       token,
		"base64 at offset 0":        b64(""),
		"base64 at offset 1":        b64("a"),
		"base64 at offset 2":        b64("ab"),
		"base64 at offset 3":        b64("abc"),
		"url-safe base64":           base64.URLEncoding.EncodeToString([]byte("?" + token)),
		"unpadded base64":           base64.RawStdEncoding.EncodeToString([]byte(token)),
		"base64 wrapped at 76":      wrap(b64("export X="), 76, "\n"),
		"base64 wrapped at 64 CRLF": wrap(b64("k"), 64, "\r\n"),
		"base64 in a JSON log line": `{"msg":"out","text":"` + wrap(b64(""), 20, `\n`) + `"}`,
		"hex":                       hexed,
		"HEX":                       strings.ToUpper(hexed),
		"xxd -p wrapped at 60":      wrap(hexed, 60, "\n"),
		"od bytes apart":            strings.TrimSpace(strings.Join(strings.SplitAfter(hexed, ""), " ")),
		"query escaped":             url.QueryEscape("tok=" + token + "&x=1"),
	} {
		t.Run(name, func(t *testing.T) {
			text := "before " + shown + " after"
			if !set.Contains(text) {
				t.Fatalf("Contains missed %q", text)
			}
			out := set.Replace(text, "[redacted]")
			if set.Contains(out) {
				t.Errorf("still found after Replace: %q", out)
			}
			if !strings.HasPrefix(out, "before ") || !strings.HasSuffix(out, " after") || !strings.Contains(out, "[redacted]") {
				t.Errorf("Replace = %q", out)
			}
			// Nothing of the encoding that could be decoded back is left.
			for _, piece := range strings.Fields(out) {
				if dec, err := base64.StdEncoding.DecodeString(piece); err == nil && strings.Contains(string(dec), token[:12]) {
					t.Errorf("a decodable piece is left: %q", piece)
				}
			}
		})
	}
}

func TestSetLeavesOtherTextAlone(t *testing.T) {
	set := New(token)
	other := base64.StdEncoding.EncodeToString([]byte("xoxb-0000000000-1111111111-ZzZzZzZzZzZzZzZzZzZzZzZz"))
	for _, text := range []string{"", "hello world", other, "deadbeef " + hex.EncodeToString([]byte("nothing to see here")),
		"xoxb-1234567890 is not the whole token"} {
		if set.Contains(text) || set.Replace(text, "X") != text {
			t.Errorf("touched %q", text)
		}
	}
	for _, set := range []*Set{nil, New(), New("short", "1234567")} {
		if !set.Empty() || set.Contains("short 1234567") || set.Replace("short", "X") != "short" || set.MaxLen() != 0 {
			t.Errorf("a set of nothing matched")
		}
	}
}

func TestSpansMergeAndCover(t *testing.T) {
	set := New("secret-value-one", "secret-value-one-and-more")
	text := "a secret-value-one-and-more b secret-value-one c"
	spans := set.Spans(text)
	if len(spans) != 2 {
		t.Fatalf("spans = %v", spans)
	}
	if got := text[spans[0][0]:spans[0][1]]; got != "secret-value-one-and-more" {
		t.Errorf("first span %q", got)
	}
	if set.Window() < set.MaxLen() {
		t.Errorf("window %d below the longest form %d", set.Window(), set.MaxLen())
	}
}
