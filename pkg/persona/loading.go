package persona

// MaxLoadingMessages is how many loading messages the platform rotates
// (assistant.threads.setStatus takes up to ten).
const MaxLoadingMessages = 10

// loading reads "## Loading messages": one message per bullet (a wrapped
// bullet is one message); prose lines are ignored with a warning, and so
// are the messages past the platform's ten.
func (ps *parser) loading(s section) {
	for _, it := range items(s.body, true) {
		switch {
		case !it.bullet:
			ps.warn(it.line, "line in \"## Loading messages\" ignored: loading messages are bullets, one message each")
		case len(ps.p.LoadingMessages) == MaxLoadingMessages:
			ps.warn(it.line, "loading message ignored: the platform rotates at most %d", MaxLoadingMessages)
		case it.text != "":
			ps.p.LoadingMessages = append(ps.p.LoadingMessages, it.text)
		}
	}
}
