package gateway

import (
	"errors"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// What every chat platform (slackio's, the simulator's internal/sim/platform) shares,
// kept here so that the simulated one needs nothing of the real one's SDK.

// ErrFileTooLarge is matched (with errors.Is) by the error of a platform's
// Download for a file over the caller's limit.
var ErrFileTooLarge = errors.New("file too large")

// ErrFileSignIn is matched by the error of a platform's download that
// answered an HTML page for a file that is not one: the platform's
// sign-in page, which it serves (with status 200) when the bot token
// lacks the files:read scope. Such an answer is never the file.
var ErrFileSignIn = errors.New("the platform answered its sign-in page, not the file: the app lacks the files:read scope")

// ErrFileHost is matched by the error of a platform's download of a file
// whose address is not on the platform's file hosts (a remote file's
// address is whatever its author chose): it is not fetched, since the
// download would carry the bot token there.
var ErrFileHost = errors.New("the file's address is not on the chat platform's file hosts")

// ChannelType derives a conversation's type from its id, for the payloads
// that carry no channel_type: D… is a DM, G… a private channel (or an old
// group DM), anything else a public channel.
func ChannelType(channelID string) string {
	switch {
	case channelID == "":
		return ""
	case strings.HasPrefix(channelID, "D"):
		return pipeline.ChannelIM
	case strings.HasPrefix(channelID, "G"):
		return pipeline.ChannelPrivate
	}
	return pipeline.ChannelPublic
}
