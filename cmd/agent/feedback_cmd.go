package main

import (
	"context"
	"fmt"
	"strings"

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

// threadLink is the thread's permalink; the platform redirects it to the
// workspace of whoever opens it.
func threadLink(channel, ts string) string {
	return "https://slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}

// feedbackCommand is `agent feedback`: the votes on final replies, per
// channel, with the worst threads.
func (c *cli) feedbackCommand() *ffcli.Command {
	return c.command(command{
		name:  "feedback",
		usage: "agent feedback [--since 7d] [--json]",
		help:  "summarise the good/bad feedback on replies: per channel, with the worst threads",
		since: "votes cast within this `duration`",
		json:  "channel",
		run:   feedback,
	})
}

func feedback(ctx context.Context, inv *invocation, _ []string) error {
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	list, err := st.FeedbackSince(ctx, inv.cutoff())
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
	if inv.json {
		return printJSON(inv.stdout, records)
	}
	if len(records) == 0 {
		_, err := fmt.Fprintf(inv.stdout, "no feedback in the last %s\n", inv.since)
		return err
	}
	w := newTable(inv.stdout, "CHANNEL\tGOOD\tBAD\tGOOD %\tWORST THREADS")
	for _, r := range records {
		var worst []string
		for _, th := range r.Worst {
			worst = append(worst, fmt.Sprintf("%s (%d bad)", th.Link, th.Bad))
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%.0f%%\t%s\n", r.Channel, r.Good, r.Bad, 100*r.Ratio, orDash(strings.Join(worst, " ")))
	}
	return w.Flush()
}
