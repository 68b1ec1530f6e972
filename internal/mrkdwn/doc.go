// Package mrkdwn turns the agent's markdown into the chat platform's mrkdwn
// dialect and splits long messages into postable parts.
//
// The agent writes GitHub-flavoured markdown; the platform's message text uses
// its own dialect: *bold*, _italic_, ~strike~, <url|text> links, no headings,
// no tables, and only &, < and > escaped (as &amp;, &lt; and &gt;). Convert
// parses the markdown with goldmark and renders mrkdwn by walking the syntax
// tree, so code stays verbatim and the platform's own tokens (<@U…>, <#C…>,
// <!here>, <https://…|…>) survive untouched. Split cuts converted text at line
// boundaries into parts that fit the platform's message limit, closing and
// reopening a code fence when a code block has to be cut.
//
// Neither function panics or fails: any input yields some output, and input
// that is not valid UTF-8 has its invalid bytes replaced by U+FFFD.
package mrkdwn
