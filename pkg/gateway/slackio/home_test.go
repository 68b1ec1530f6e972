package slackio

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A view past the platform's 100 blocks is cut at 99 and says how many
// lines it left out; a line's button is its section's accessory.
func TestHomeBlocksWithinTheLimit(t *testing.T) {
	var v pipeline.HomeView
	v.Notice = "done"
	for i := range 12 {
		s := pipeline.HomeSection{Title: fmt.Sprintf("section %d", i), More: 3}
		for j := range 9 {
			s.Lines = append(s.Lines, pipeline.HomeLine{Text: fmt.Sprintf("line %d", j),
				Button: &pipeline.HomeButton{Label: "Forget", ActionID: "home_forget_memory", Value: fmt.Sprintf("m%d", j)}})
		}
		v.Sections = append(v.Sections, s)
	}
	blocks := homeBlocks(v)
	if len(blocks) != maxHomeBlocks {
		t.Fatalf("%d blocks, want %d", len(blocks), maxHomeBlocks)
	}
	raw, _ := json.Marshal(blocks)
	if !strings.Contains(string(raw), "more lines not shown") {
		t.Errorf("no count of the lines left out")
	}
	if !strings.Contains(string(raw), `"accessory":{"type":"button","text":{"type":"plain_text","text":"Forget"},"action_id":"home_forget_memory","value":"m0"}`) &&
		!strings.Contains(string(raw), `"action_id":"home_forget_memory"`) {
		t.Errorf("no button: %s", raw[:300])
	}
	small := homeBlocks(pipeline.HomeView{Sections: []pipeline.HomeSection{{Title: "t", Empty: "None."}}})
	if len(small) != 2 {
		t.Errorf("an empty section: %d blocks, want its title and its empty text", len(small))
	}
}
