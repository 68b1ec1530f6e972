package secret

import (
	"encoding/base64"
	"strings"
	"testing"
)

// benchText is 64 KiB of typical tool output: lines of a listing.
func benchText(hit bool) string {
	var b strings.Builder
	for i := 0; b.Len() < 64<<10; i++ {
		b.WriteString("-rw-r--r-- 1 agent agent 4096 Nov 24 12:00 file-")
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString(".txt\n")
		if hit && i == 500 {
			b.WriteString(base64.StdEncoding.EncodeToString([]byte(token)) + "\n")
		}
	}
	return b.String()
}

func benchSet() *Set {
	return New(token, "xapp-1-A0APP-1234567890-abcdefabcdefabcdefabcdef", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789")
}

func BenchmarkReplace(b *testing.B) {
	for _, tc := range []struct {
		name string
		hit  bool
	}{{"clean", false}, {"hit", true}} {
		b.Run(tc.name, func(b *testing.B) {
			set, text := benchSet(), benchText(tc.hit)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = set.Replace(text, "[redacted]")
			}
		})
	}
}

func BenchmarkContainsShort(b *testing.B) {
	set := benchSet()
	b.ReportAllocs()
	for b.Loop() {
		_ = set.Contains("session created for thread D0MGR:1700000000.000100")
	}
}
