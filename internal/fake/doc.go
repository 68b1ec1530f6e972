// Package fake holds in-process fakes of the external services the runtime
// talks to, for tests: [Slack] (the chat platform's Web API and Socket Mode)
// and [Anthropic] (the model provider's Messages API). Each is an
// [net/http/httptest] server reached through the client library's base-URL
// option, so the production clients run unchanged against it.
//
// The fakes follow one pattern: the zero value is ready to use, exported
// fields script the behaviour, every request is recorded and can be waited
// for, and anything the fake does not recognise (an unknown method, a wrong
// credential, a malformed request) fails the test through the T field while
// being answered the way the real service answers it.
package fake
