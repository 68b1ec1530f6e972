package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/pkg/gateway/slackio"
	"github.com/persona-runtime/agent/pkg/persona"
)

// botScopes are the bot token scopes every feature of the runtime needs.
var botScopes = []string{
	"app_mentions:read", // rule 2: @mentions in channels
	"assistant:write",   // the assistant status indicator
	"channels:history",  // thread replies in public channels
	"channels:read",     // get_channel_info, list_channel_members in public channels
	"chat:write",        // replies, edits, cards
	"commands",          // slash commands
	"files:read",        // files people attach
	"files:write",       // mcp__agent_chat__upload
	"groups:history",    // thread replies in private channels
	"groups:read",       // get_channel_info, list_channel_members in private channels
	"im:history",        // DMs
	"im:read",           // a DM's info and members
	"im:write",
	"mpim:read",       // a group DM's info and members
	"reactions:write", // mcp__agent_chat__react, unreact
	// mcp__agent_chat__search: the platform's real-time search as the
	// person asking (assistant.search.context with their action token).
	"search:read.public", "search:read.private", "search:read.im", "search:read.mpim",
	"users:read", // get_user
}

var botEvents = []string{"app_mention", "assistant_thread_started", "message.channels", "message.groups", "message.im",
	"agent_session_stopped", // the agent session's stop button (without it setStatus warns)
	"app_home_opened",       // a person opens the DM (the persona's suggested prompts) or the Home tab (internal/home)
}

type slashCommand struct {
	Command      string `json:"command"`
	URL          string `json:"url,omitempty"` // the HTTP ingress's; none in socket mode
	Description  string `json:"description"`
	UsageHint    string `json:"usage_hint,omitempty"`
	ShouldEscape bool   `json:"should_escape"`
}

var slashCommands = []slashCommand{
	{Command: "/ingest", Description: "Synthesize the knowledge base's raw notes into its wiki", UsageHint: "[label]"},
	{Command: "/1on1", Description: "Lock this conversation to you and the manager", UsageHint: "[off]"},
	{Command: "/mode", Description: "Set the permission mode of this conversation", UsageHint: "ask | accept-edits | bypass | plan | dont-ask"},
	{Command: "/abort", Description: "Stop the agent's running turn"},
	{Command: "/compact", Description: "Summarise this conversation's history now"},
	{Command: "/schedule", Description: "Schedule work in this channel", UsageHint: `"<when>" "<prompt>" [channel]`},
	{Command: "/schedules", Description: "List this conversation's schedules"},
	{Command: "/unschedule", Description: "Remove a schedule", UsageHint: "<id>"},
	{Command: "/connect", Description: "Sign in to a tool server with your own account", UsageHint: "<server>"},
	{Command: "/disconnect", Description: "Forget your sign-in to a tool server", UsageHint: "<server>"},
	{Command: "/connections", Description: "List the tool servers you are signed in to"},
	{Command: "/ignore", Description: "Mute a person", UsageHint: "<@person> [30m|2h|1d]"},
	{Command: "/ignore-thread", Description: "Mute this channel", UsageHint: "[30m|2h|1d]"},
	{Command: "/unignore", Description: "Lift a person's mute", UsageHint: "<@person>"},
	{Command: "/unignore-thread", Description: "Lift this channel's mute"},
	{Command: "/model", Description: "Show or set this conversation's model", UsageHint: "[model id]"},
	{Command: "/remember", Description: "Remember a fact here (--persona: in every conversation; the manager only)", UsageHint: "[--persona] <text>"},
	{Command: "/memory", Description: "List what the agent remembers here and everywhere"},
	{Command: "/forget", Description: "Forget a memory", UsageHint: "<id>"},
	{Command: "/help", Description: "What the agent does and who may do what"},
}

// appManifest is the chat app's manifest for a persona named name: for
// socket mode, or, when httpBase is an https:// address, for the HTTP
// ingress served there (socket mode off, the Request URLs set).
func appManifest(name, httpBase string) map[string]any {
	commands := slashCommands
	events := map[string]any{"bot_events": botEvents}
	interactivity := map[string]any{"is_enabled": true}
	if httpBase != "" {
		commands = make([]slashCommand, len(slashCommands))
		for i, c := range slashCommands {
			c.URL = httpBase + slackio.PathCommands
			commands[i] = c
		}
		events["request_url"] = httpBase + slackio.PathEvents
		interactivity["request_url"] = httpBase + slackio.PathInteractive
	}
	return map[string]any{
		"display_information": map[string]any{
			"name":        name,
			"description": name + ", a persona agent",
		},
		"features": map[string]any{
			"app_home": map[string]any{
				"home_tab_enabled":               true, // the App Home tab (internal/home)
				"messages_tab_enabled":           true,
				"messages_tab_read_only_enabled": false,
			},
			// The platform's agent view (it replaces assistant_view): each
			// thread an agent session with a status, a title and a stop button.
			"agent_view": map[string]any{
				"agent_description": name + " works in threads: mention it in a channel or send it a DM.",
			},
			"bot_user": map[string]any{
				"display_name":  name,
				"always_online": true,
			},
			"slash_commands": commands,
		},
		"oauth_config": map[string]any{
			"scopes": map[string]any{"bot": botScopes},
		},
		"settings": map[string]any{
			"event_subscriptions":    events,
			"interactivity":          interactivity,
			"org_deploy_enabled":     false,
			"socket_mode_enabled":    httpBase == "",
			"token_rotation_enabled": false,
		},
	}
}

// manifestCommand is `agent manifest`: the chat app's manifest.
func (c *cli) manifestCommand() *ffcli.Command {
	var soul, httpBase string
	return c.command(command{
		name:      "manifest",
		usage:     "agent manifest [--soul PATH] [--http https://host]",
		help:      "print the chat app's manifest JSON",
		logFormat: "json",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&soul, "soul", "", "SOUL.md whose name the app takes (default: SOUL.md under the home)")
			fs.StringVar(&httpBase, "http", "", "https://host: the manifest of the HTTP ingress served there (socket mode off)")
		},
		run: func(_ context.Context, inv *invocation, _ []string) error {
			base, err := ingressBase(httpBase)
			if err != nil {
				return err
			}
			path := inv.soulPath(soul)
			name := "Agent"
			if src, err := os.ReadFile(path); err == nil {
				// A scaffold's placeholder name is not a name to install.
				if p, err := persona.Parse(path, src); err == nil && !slices.Contains(p.Missing(), "identity.name") {
					name = p.Identity.Name
				}
			}
			enc := json.NewEncoder(inv.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(appManifest(name, base))
		},
	})
}

// ingressBase checks the --http address: https (the platform sends events
// to nothing else), a host, no query; a trailing "/" is dropped.
func ingressBase(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("--http: %w", err)
	case u.Scheme != "https" || u.Host == "":
		return "", fmt.Errorf("--http: want the https://host address the platform reaches the service at, got %q", raw)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("--http: %q has a query or a fragment", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
