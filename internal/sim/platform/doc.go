// Package platform is the simulator's chat platform, in memory: the
// transport the gateway reads events from and the chat API the service
// posts through, with everything the bot does kept in a transcript. The
// simulator swaps it for the real platform; nothing else changes.
package platform
