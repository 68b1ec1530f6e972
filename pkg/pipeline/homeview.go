package pipeline

import "context"

// A person's App Home view, in platform-neutral form: the gateway renders
// it as the platform's blocks (views.publish), the simulator as text.

// HomeView is one person's view: a notice on top (the answer to their
// last click), then sections.
type HomeView struct {
	Notice   string
	Sections []HomeSection
}

// HomeSection is a titled list; More counts the items left out (the
// view's block limit), Empty is said when it has none.
type HomeSection struct {
	Title string
	Lines []HomeLine
	More  int
	Empty string
}

// HomeLine is one item, in the platform's dialect, with its button.
type HomeLine struct {
	Text   string
	Button *HomeButton
}

// HomeButton is a button of the view: ActionID names what it does, Value
// what it acts on.
type HomeButton struct {
	Label, ActionID, Value string
}

// HomePublisher publishes a person's Home view.
type HomePublisher interface {
	PublishHome(ctx context.Context, userID string, v HomeView) error
}
