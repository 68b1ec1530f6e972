package pipeline_test

import (
	"slices"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Every spelling of /abort, so that none waits behind the turn it is meant
// to stop (the gateway queues what this finds apart).
func TestParseCommandAbort(t *testing.T) {
	for text, want := range map[string]bool{
		"/abort": true, "<@U0BOT> /abort": true, " <@U0BOT>  /abort now": true,
		"/ABORT": true, "<@U0BOT> /Abort": true, "/abort\tnow": true, "/abort\nplease": true,
		"/aborted": false, "please /abort": false, "": false, "<@U0BOT": false,
	} {
		c, ok := pipeline.ParseCommand(text, botUser)
		if got := ok && c.Name == "/abort"; got != want {
			t.Errorf("ParseCommand(%q) = %+v, %v", text, c, ok)
		}
	}
}

func TestParseCommand(t *testing.T) {
	for _, tt := range []struct {
		name, text, bot string
		want            pipeline.Command
		ok              bool
	}{
		{"bare", "/mode plan", botUser, pipeline.Command{Name: "/mode", Args: "plan"}, true},
		{"no args", "/help", botUser, pipeline.Command{Name: "/help"}, true},
		{"mention first", "<@U0BOT> /mode bypass", botUser, pipeline.Command{Name: "/mode", Args: "bypass"}, true},
		{"labelled mention", "<@U0BOT|ada> /mode bypass", botUser, pipeline.Command{Name: "/mode", Args: "bypass"}, true},
		{"mention, spaces", "  <@U0BOT>   /mode   bypass  ", botUser, pipeline.Command{Name: "/mode", Args: "bypass"}, true},
		{"mention last", "/1on1 off <@U0BOT>", botUser, pipeline.Command{Name: "/1on1", Args: "off"}, true},
		{"upper case name, args kept", "/INGEST Runbooks", botUser, pipeline.Command{Name: "/ingest", Args: "Runbooks"}, true},
		{"a path is for the caller to tell", "<@U0BOT> /etc/hosts is broken", botUser,
			pipeline.Command{Name: "/etc/hosts", Args: "is broken"}, true},
		{"mention of someone else first", "<@U0BOB> /mode bypass", botUser, pipeline.Command{}, false},
		{"words first", "please run /mode bypass", botUser, pipeline.Command{}, false},
		{"bot unknown: its mention is words", "<@U0BOT> /abort", "", pipeline.Command{}, false},
		{"empty", "", botUser, pipeline.Command{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := pipeline.ParseCommand(tt.text, tt.bot)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ParseCommand(%q, %q) = %+v, %v; want %+v, %v", tt.text, tt.bot, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The words of /schedule's arguments, as each client types its quotes.
func TestSplitArgs(t *testing.T) {
	for _, tt := range []struct {
		args string
		want []string
		err  string
	}{
		{`"0 9 * * 1" "weekly digest" channel`, []string{"0 9 * * 1", "weekly digest", "channel"}, ""},
		{`“0 9 * * 1” “don’t forget the digest”`, []string{"0 9 * * 1", "don’t forget the digest"}, ""},
		{`'@every 1h' 'ping'`, []string{"@every 1h", "ping"}, ""},
		{`”in 5m” ”stretch”`, []string{"in 5m", "stretch"}, ""},
		{"  s7abcdefg  ", []string{"s7abcdefg"}, ""},
		{`"" "x"`, []string{"", "x"}, ""},
		{"", nil, ""},
		{`"0 9 * * 1" "no end`, nil, `unclosed quote "\""`},
	} {
		got, err := pipeline.SplitArgs(tt.args)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("SplitArgs(%q) error = %v, want %s", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}
