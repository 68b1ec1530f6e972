// Package agent runs agent turns on the Messages API: the tool-use loop, the
// thread's persisted history, prompt caching, the stop guard, and the cap on
// turns running at once. It implements pipeline.Agent.
package agent
