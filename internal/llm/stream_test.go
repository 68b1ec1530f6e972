package llm

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// streams are event sequences as the provider sends them (the data lines).
var streams = map[string][]string{
	"text and tool use": {
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I will "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"search — ünïcode \"quoted\"\n"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"Bash","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"grep"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" -rn x\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"Noop","input":{}}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
		`{"type":"message_stop"}`,
	},
	"thinking, citations, usage and container in the delta": {
		`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":0}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" twice."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":[]}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"abc","document_index":0,"document_title":"Doc","start_char_index":0,"end_char_index":3}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"The answer."}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"container":{"id":"cont_1","expires_at":"2026-11-25T00:00:00Z"}},"usage":{"output_tokens":77,"input_tokens":6,"cache_read_input_tokens":3}}`,
		`{"type":"message_stop"}`,
	},
	"a tool input cut by max_tokens": {
		`{"type":"message_start","message":{"id":"msg_3","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":0}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"Write","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a.txt\", \"content\": \"abc"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":8192}}`,
		`{"type":"message_stop"}`,
	},
	"stop sequence, no usage in the delta": {
		`{"type":"message_start","message":{"id":"msg_4","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hel"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"###"}}`,
		`{"type":"message_stop"}`,
	},
}

// The answer put together from the stream is the message the SDK's
// Accumulate makes of the same events: the same blocks, stop reason,
// usage, and the same param when it goes back into the history.
func TestAccumulatorMatchesTheSDK(t *testing.T) {
	for name, events := range streams {
		t.Run(name, func(t *testing.T) {
			var acc accumulator
			var datas [][]byte
			for _, e := range events {
				var ev streamEvent
				if err := json.Unmarshal([]byte(e), &ev); err != nil {
					t.Fatalf("%s: %v", e, err)
				}
				if err := acc.add(&ev); err != nil {
					t.Fatalf("%s: %v", e, err)
				}
				datas = append(datas, []byte(e))
			}
			if !acc.stopped {
				t.Fatal("message_stop not seen")
			}
			want, err := sdkAccumulate(datas)
			if err != nil {
				t.Fatal(err)
			}
			got, err := acc.message()
			if strings.Contains(name, "cut") {
				if err == nil {
					t.Fatal("a message with a cut tool input put together")
				}
				return // the client falls back to sdkAccumulate
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != want.ID || got.Model != want.Model || got.Role != want.Role || got.StopReason != want.StopReason ||
				got.StopSequence != want.StopSequence || got.Container.ID != want.Container.ID {
				t.Errorf("message = %s %s %s %s %q %q, want %s %s %s %s %q %q", got.ID, got.Model, got.Role, got.StopReason, got.StopSequence,
					got.Container.ID, want.ID, want.Model, want.Role, want.StopReason, want.StopSequence, want.Container.ID)
			}
			gu, wu := got.Usage, want.Usage
			if gu.InputTokens != wu.InputTokens || gu.OutputTokens != wu.OutputTokens ||
				gu.CacheReadInputTokens != wu.CacheReadInputTokens || gu.CacheCreationInputTokens != wu.CacheCreationInputTokens {
				t.Errorf("usage = %+v, want %+v", gu, wu)
			}
			if len(got.Content) != len(want.Content) {
				t.Fatalf("%d blocks, want %d", len(got.Content), len(want.Content))
			}
			for i := range got.Content {
				g, w := got.Content[i], want.Content[i]
				if g.Type != w.Type || g.Text != w.Text || g.ID != w.ID || g.Name != w.Name || g.Thinking != w.Thinking ||
					g.Signature != w.Signature || !jsonEqual(g.Input, w.Input) || len(g.Citations) != len(w.Citations) {
					t.Errorf("block %d = %+v, want %+v", i, g, w)
				}
			}
			gp, _ := json.Marshal(got.ToParam())
			wp, _ := json.Marshal(want.ToParam())
			if !jsonEqual(gp, wp) {
				t.Errorf("param =\n%s\nwant\n%s", gp, wp)
			}
		})
	}
}

// Events out of order are the stream's fault, as with the SDK.
func TestAccumulatorRefusesBlocksOutOfOrder(t *testing.T) {
	for _, events := range [][]string{
		{`{"type":"message_start","message":{"id":"m","content":[]}}`, `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
		{`{"type":"message_start","message":{"id":"m","content":[]}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`},
		{`{"type":"message_start","message":{"id":"m","content":[]}}`, `{"type":"content_block_stop","index":-1}`},
	} {
		var acc accumulator
		var err error
		for _, e := range events {
			var ev streamEvent
			if err = json.Unmarshal([]byte(e), &ev); err != nil {
				t.Fatal(err)
			}
			if err = acc.add(&ev); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%v accepted", events)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}

// Through the client: each scripted stream, sent as the provider sends it
// (with a ping and a data line the SDK skips), answers what the SDK's
// accumulation makes of it — the cut tool input included, which only the
// SDK can decode.
func TestSendStreamsAsTheSDK(t *testing.T) {
	for name, events := range streams {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("content-type", "text/event-stream")
				fmt.Fprint(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n")
				for _, e := range events {
					var head struct{ Type string }
					_ = json.Unmarshal([]byte(e), &head)
					fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
				}
			}))
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-x"}, slog.New(slog.DiscardHandler), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Send(t.Context(), anthropic.MessageNewParams{MaxTokens: 1024,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			if err != nil {
				t.Fatal(err)
			}
			var datas [][]byte
			for _, e := range events {
				datas = append(datas, []byte(e))
			}
			want, err := sdkAccumulate(datas)
			if err != nil {
				t.Fatal(err)
			}
			gp, _ := json.Marshal(got.ToParam())
			wp, _ := json.Marshal(want.ToParam())
			if got.StopReason != want.StopReason || got.Usage.OutputTokens != want.Usage.OutputTokens || !jsonEqual(gp, wp) {
				t.Errorf("got %s %d %s\nwant %s %d %s", got.StopReason, got.Usage.OutputTokens, gp, want.StopReason, want.Usage.OutputTokens, wp)
			}
		})
	}
}

// longAnswer is a streamed answer of 300 text deltas (about 1 000 tokens).
func longAnswer() [][]byte {
	ev := []string{`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`}
	for i := range 300 {
		ev = append(ev, fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word %d and some more "}}`, i))
	}
	ev = append(ev, `{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":900}}`, `{"type":"message_stop"}`)
	out := make([][]byte, len(ev))
	for i, e := range ev {
		out[i] = []byte(e)
	}
	return out
}

// BenchmarkStreamAccumulate puts a long streamed answer together: as the
// client does, and as the SDK's stream and Accumulate did.
func BenchmarkStreamAccumulate(b *testing.B) {
	events := longAnswer()
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var acc accumulator
			for _, d := range events {
				var ev streamEvent
				if err := json.Unmarshal(d, &ev); err != nil {
					b.Fatal(err)
				}
				if err := acc.add(&ev); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := acc.message(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sdkAccumulate(events); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func init() {
	for _, e := range longAnswer() {
		streams["300 text deltas"] = append(streams["300 text deltas"], string(e))
	}
}
