// Package repl is the simulator's interactive front end (`agent sim`): a
// full-screen terminal program in which a person types messages and
// commands (/as, /layer, /click, /scenario, …) into a running simulation
// and sees the transcript live. It drives the simulation with the runner's
// steps (package runner), as `agent sim run` does.
package repl
