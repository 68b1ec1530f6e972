package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// feedbackWorst is how many threads `agent feedback` lists per channel.
const feedbackWorst = 3

// feedbackRecord is one channel as `agent feedback --json` prints it.
type feedbackRecord struct {
	Channel string                 `json:"channel"`
	Good    int                    `json:"good"`
	Bad     int                    `json:"bad"`
	Ratio   float64                `json:"ratio"` // good / (good + bad)
	Worst   []feedbackThreadRecord `json:"worst_threads"`
}

type feedbackThreadRecord struct {
	ThreadTS string `json:"thread_ts"`
	Good     int    `json:"good"`
	Bad      int    `json:"bad"`
	Link     string `json:"link"`
}

// durationFlag is a time.Duration that also takes days ("7d").
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("not a number of days: %q", s)
		}
		*f.d = time.Duration(n * 24 * float64(time.Hour))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// threadLink is the thread's permalink; the platform redirects it to the
// workspace of whoever opens it.
func threadLink(channel, ts string) string {
	return "https://slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}

// feedbackCommand is `agent feedback`: the votes on final replies, per
// channel, with the worst threads.
func (c *cli) feedbackCommand() *ffcli.Command {
	fs := flag.NewFlagSet("feedback", flag.ContinueOnError)
	since := 7 * 24 * time.Hour
	fs.Var(durationFlag{&since}, "since", "votes cast within this duration (7d, 36h, …)")
	asJSON := fs.Bool("json", false, "print one JSON object per channel")
	cfg, finish := c.configFlags(fs, "text")
	return &ffcli.Command{
		Name:       "feedback",
		ShortUsage: "agent feedback [--since 7d] [--json]",
		ShortHelp:  "summarise the good/bad feedback on replies: per channel, with the worst threads",
		FlagSet:    fs,
		Exec: func(ctx context.Context, _ []string) error {
			if err := finish(); err != nil {
				return err
			}
			st, err := openDatabase(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.FeedbackSince(ctx, time.Now().Add(-since))
			if err != nil {
				return err
			}
			records := make([]feedbackRecord, 0, len(list))
			for _, ch := range list {
				r := feedbackRecord{Channel: ch.ChannelID, Good: ch.Good, Bad: ch.Bad}
				if n := ch.Good + ch.Bad; n > 0 {
					r.Ratio = float64(ch.Good) / float64(n)
				}
				for _, th := range ch.Threads {
					if th.Bad == 0 || len(r.Worst) == feedbackWorst {
						break
					}
					r.Worst = append(r.Worst, feedbackThreadRecord{ThreadTS: th.ThreadTS, Good: th.Good, Bad: th.Bad,
						Link: threadLink(ch.ChannelID, th.ThreadTS)})
				}
				records = append(records, r)
			}
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				for _, r := range records {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			if len(records) == 0 {
				_, err := fmt.Fprintf(c.stdout, "no feedback in the last %s\n", since)
				return err
			}
			w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "CHANNEL\tGOOD\tBAD\tGOOD %\tWORST THREADS")
			for _, r := range records {
				var worst []string
				for _, th := range r.Worst {
					worst = append(worst, fmt.Sprintf("%s (%d bad)", th.Link, th.Bad))
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%.0f%%\t%s\n", r.Channel, r.Good, r.Bad, 100*r.Ratio, orDash(strings.Join(worst, " ")))
			}
			return w.Flush()
		},
	}
}
