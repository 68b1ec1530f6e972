// Package fake is the tests' kit: in-process fakes of the external services
// the runtime talks to, and the helpers every package's tests share.
//
// The services: [Slack] (the chat platform's Web API and Socket Mode),
// [Anthropic] (the model provider's Messages API) and [Git] (a git host for
// the git command line). Slack and Anthropic are [net/http/httptest]
// servers reached through the client library's base-URL option, Git a
// global git configuration whose insteadOf rules lead the production URLs
// to local bare repositories, so the production clients run unchanged
// against them. The fakes follow one pattern: the zero value (or the New
// function) is ready to use, exported fields script the behaviour, every
// request is recorded and can be waited for, and anything the fake does
// not recognise (an unknown method, a wrong credential, a malformed
// request) fails the test through the T field while being answered the
// way the real service answers it.
//
// The helpers: [Clock], a clock.Clock that moves only when told, so that a
// test proves a timer did not fire by moving past it rather than by
// sleeping; [Outbox], a recording pipeline.Outbox; [LogBuffer], a log sink
// safe for concurrent use; [Eventually], for a state a test can observe but
// not be told of; [Swapper], the symlink swap race of a sandboxed command;
// [InitAllocs], what each package allocates at program start; [CountConns]
// and [InRounds], for a client's connection pool (connections opened and
// closed at a server, calls in flight together); and the file
// helpers ([WriteFiles], [ReadFile], [Symlink], [CopyTestBinary]). Golden
// files are package golden's.
//
// fake imports nothing of this module but pkg/clock, so that the tests of
// any package, internal ones included, can use it.
package fake
