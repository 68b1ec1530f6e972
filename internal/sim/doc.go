// Package sim holds the simulator's scenarios and world: the YAML scenario
// transcripts of interfaces.md, the sim world persona (rendered as a real
// SOUL.md that the real parser reads) and the discovery of scenario files.
package sim
