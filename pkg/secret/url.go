package secret

import (
	"errors"
	"net/url"
	"strings"
)

// Mask is what stands for a password in a masked address.
const Mask = "xxxxx"

// MaskURL returns addr (a scheme://user:password@host/… address) with its
// password, and the value of any query parameter whose name holds "pass",
// replaced by Mask: what logs, errors and diagnoses may show. It works on
// addresses that do not parse, which is when a password shows most
// (url.Parse quotes the whole address in its error): everything between
// the first ":" after the scheme and the last "@" is masked, so a password
// holding "/", "?", "#", "@" or a bad "%" escape is masked whole. An "@"
// in the query makes it mask more than the password, never less.
func MaskURL(addr string) string {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return addr
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 {
			rest = rest[:colon+1] + Mask + rest[at:]
		}
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		params := strings.Split(rest[q+1:], "&")
		for i, kv := range params {
			if k, _, ok := strings.Cut(kv, "="); ok && strings.Contains(strings.ToLower(k), "pass") {
				params[i] = k + "=" + Mask
			}
		}
		rest = rest[:q+1] + strings.Join(params, "&")
	}
	return scheme + "://" + rest
}

// URLPasswords returns the passwords addr carries, as written and
// decoded, found the way MaskURL finds them: also when addr does not
// parse, so that a redactor knows them before anything quotes the
// address.
func URLPasswords(addr string) []string {
	_, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return nil
	}
	var raw []string
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 {
			raw = append(raw, rest[colon+1:at])
		}
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		for _, kv := range strings.Split(rest[q+1:], "&") {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.Contains(strings.ToLower(k), "pass") {
				raw = append(raw, v)
			}
		}
	}
	var out []string
	add := func(v string) {
		for _, o := range out {
			if o == v {
				return
			}
		}
		if v != "" {
			out = append(out, v)
		}
	}
	for _, v := range raw {
		add(v)
		if dec, err := url.PathUnescape(v); err == nil {
			add(dec)
		}
		if dec, err := url.QueryUnescape(v); err == nil {
			add(dec)
		}
	}
	return out
}

// CheckURL reports why addr does not parse as an address, in words that
// never quote it (url.Parse's error quotes the whole address, password
// included, and its escape error the password's characters).
func CheckURL(addr string) error {
	_, err := url.Parse(addr)
	if err == nil {
		return nil
	}
	var escape url.EscapeError
	if errors.As(err, &escape) {
		return errors.New("a % is not followed by two hex digits: write a % in the user name or password as %25")
	}
	return errors.New("the address does not parse: write a / ? # @ : or % in the user name or password as %2F %3F %23 %40 %3A or %25")
}
