// Package sim holds the simulator's scenarios and world: the YAML scenario
// transcripts of interfaces.md, the sim world persona (rendered as a real
// SOUL.md that the real parser reads) and the discovery of scenario files.
//
// The rest of the simulator lives below it, one job a package: platform
// (the chat platform, in memory), scripted (the model that follows a
// script), runner (boots the production service per scenario, plays steps,
// settles), golden (the golden transcripts) and repl (`agent sim`). Only
// cmd imports the tree; the runtime never does.
package sim
