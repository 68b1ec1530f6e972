// Package golden renders a scenario's golden transcript and compares it
// with the file kept beside the scenario (<name>.golden), or rewrites it.
//
// A golden transcript is the whole conversation a scenario produces,
// rendered deterministically (ids, timestamps, temporary paths replaced by
// stable names) and compared on every `agent sim run`:
//
//	> t1 m1 · C0TEAM [trusted] · member <@U0ALICE>: <@U0BOT> please deploy
//	  dropped: duplicate
//	  tool mcp__agent_chat__request_approval {"category":"deploy",…} → ok: approved by <@U0APP>
//	< t1 m2 card ap1 · approval · deploy · [approve, deny]: deploy prod
//	< t1 m2 card ap1 resolved: approved by <@U0APP>
//	< t1 m3 post: approved by <@U0APP>
//
// ">" is what people do, "<" what the bot shows, indented lines what
// happened in between (drops, tool calls).
package golden
