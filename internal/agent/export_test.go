package agent

// OnWait has f told what each turn of e starts to wait for: "slot", "status"
// (its first status call) or "write" (a message or tool result written
// behind it). Call it before the first turn.
func (e *Engine) OnWait(f func(what string)) { e.waits = f }
