package commands

import (
	"testing"
	"time"
)

func TestParseMuteDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30m", 30 * time.Minute, ""},
		{"2h", 2 * time.Hour, ""},
		{"1d", 24 * time.Hour, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"168h", 7 * 24 * time.Hour, ""},
		{"8d", 0, msgLongDuration},
		{"999h", 0, msgLongDuration},
		{"10081m", 0, msgLongDuration},
		{"99999999999999999999d", 0, msgBadDuration},
		{"badvalue", 0, msgBadDuration},
		{"0m", 0, msgBadDuration},
		{"-1h", 0, msgBadDuration},
		{"+1h", 0, msgBadDuration},
		{"1.5h", 0, msgBadDuration},
		{"1w", 0, msgBadDuration},
		{"h", 0, msgBadDuration},
	} {
		got, err := parseMuteDuration(tc.in)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: %v, %v; want error %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if err == nil && formatMute(got) != tc.in && tc.in != "168h" {
			t.Errorf("formatMute(%v) = %q, want %q", got, formatMute(got), tc.in)
		}
	}
}

func TestMentioned(t *testing.T) {
	for in, want := range map[string]string{
		"<@U0BOB>": "U0BOB", "<@U0BOB|bob>": "U0BOB", "<@W0ENT>": "W0ENT",
		"U0BOB": "", "<@U0BOB": "", "<!channel>": "", "<@u0bob>": "", "<@C0TEAM>": "", "<@>": "",
	} {
		if got := mentioned(in); got != want {
			t.Errorf("mentioned(%q) = %q, want %q", in, got, want)
		}
	}
}
