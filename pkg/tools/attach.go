package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Defaults of Attachments (interfaces.md: AGENT_MAX_ATTACHMENTS and
// AGENT_MAX_ATTACHMENT_MB).
const (
	DefaultMaxAttachments     = 20
	DefaultMaxAttachmentBytes = 20 << 20
)

// attachDir is the workspace folder attachments are saved in.
const attachDir = "attachments"

// attachMaxName caps a saved file's name in bytes: file systems refuse
// names over 255 bytes, and the room left serves a de-duplicating suffix.
const attachMaxName = 200

// Downloader streams a file attached to a message.
type Downloader interface {
	// DownloadTo writes the file f (from f.URL, the platform's download
	// address) to w as it arrives and returns the bytes written; a file
	// over maxBytes fails (Attachments.TooLarge names that error) with at
	// most maxBytes written, and an HTML page answered for a file that is
	// not HTML fails (Attachments.SignIn).
	DownloadTo(ctx context.Context, f pipeline.File, w io.Writer, maxBytes int64) (int64, error)
}

// Attachments saves the files attached to a message in the thread's
// workspace, under attachments/, says what became of each in the turn's
// input, and picks the ones the model also sees (images and PDFs, Shown).
// Every file is streamed to disk through the workspace's root (Confined): a
// symlink planted at attachments/ or at a file's name (a sandboxed command
// can make one) is refused or replaced, never written through, and no name
// or id a message carries leads out. At most MaxFiles files of a message
// are saved, each at most MaxBytes; the others are named as skipped. A
// download that answers an HTML page for a file that is not HTML (the
// platform's sign-in page) is not saved: the note names the missing scope.
type Attachments struct {
	// Workspace is the thread's workspace (Builtins.Workspace).
	Workspace func(threadKey string) (string, error)
	Download  Downloader
	// TooLarge is the error Download's over-the-limit failures match
	// (errors.Is); such a file is named as skipped.
	TooLarge error
	// SignIn is the error Download's sign-in page failures match
	// (errors.Is); such a file is named as not saved, for want of the
	// files:read scope.
	SignIn error
	// Host is the error Download's refusals of a file whose address is
	// not on the platform's file hosts match (errors.Is): the bot token
	// goes nowhere else. Such a file is named as skipped, with its host.
	Host error
	// MaxFiles and MaxBytes are the caps; zero means the defaults.
	MaxFiles int
	MaxBytes int64
	// Log, when set, is told of a sign-in page met: the operator has to
	// add the scope, and the person only sees the model's answer.
	Log *slog.Logger
}

// Attached is what became of a message's files.
type Attached struct {
	// Note says what became of each file, for the person's message in the
	// turn's input ("" when the message had none).
	Note string
	// Shown are the files saved that the model also sees, as image or
	// document content blocks, in the message's order.
	Shown []Shown
}

// errSignInPage is Save's own finding of a sign-in page: the bytes of an
// HTML page for a file that is not HTML, whatever the answer's type said.
var errSignInPage = errors.New("an HTML page answered for a file that is not HTML")

// signInReason is the note's reason for a file the platform answered with
// its sign-in page.
const signInReason = "the platform answered its sign-in page, not the file: the app lacks the files:read scope"

// Save saves the files of t's message and returns what became of them; it
// is agent.Options.Attach. Its error means no file could be saved at all
// (no workspace); a file that fails is a line of the note.
func (a *Attachments) Save(ctx context.Context, t *pipeline.Turn) (Attached, error) {
	maxFiles, maxBytes := a.MaxFiles, a.MaxBytes
	if maxFiles <= 0 {
		maxFiles = DefaultMaxAttachments
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxAttachmentBytes
	}
	ws, err := a.Workspace(t.Event.ThreadKey())
	if err != nil {
		return Attached{}, fmt.Errorf("attachments: %w", err)
	}
	files := Confined{Dir: ws}
	dirErr := files.MkdirAll(attachDir, 0o700)
	var out Attached
	var b strings.Builder
	b.WriteString("Files attached to this message, saved in your workspace:\n")
	used := map[string]bool{}
	for i, f := range t.Event.Files {
		name := attachName(f.ID, f.Name)
		switch {
		case i >= maxFiles:
			fmt.Fprintf(&b, "- %s: skipped (over the limit of %d files per message)\n", name, maxFiles)
			continue
		case f.Size > maxBytes:
			fmt.Fprintf(&b, "- %s: skipped (%s, over the limit of %s per file)\n", name, attachSize(f.Size), attachSize(maxBytes))
			continue
		case dirErr != nil:
			fmt.Fprintf(&b, "- %s: not saved (%s)\n", name, attachDirReason(dirErr))
			continue
		}
		name = attachUnique(name, used)
		rel := path.Join(attachDir, name)
		seen := newAttachSeen()
		size, err := files.Save(rel, 0o600, func(w io.Writer) error {
			if _, err := a.Download.DownloadTo(ctx, f, io.MultiWriter(w, seen), maxBytes); err != nil {
				return err
			}
			if seen.html() && !f.IsHTML() && !attachTextual(f.MimeType) {
				return errSignInPage
			}
			return nil
		})
		switch {
		case err != nil && a.TooLarge != nil && errors.Is(err, a.TooLarge):
			fmt.Fprintf(&b, "- %s: skipped (over the limit of %s per file)\n", name, attachSize(maxBytes))
		case err != nil && a.Host != nil && errors.Is(err, a.Host):
			fmt.Fprintf(&b, "- %s: skipped (%s)\n", name, attachHostReason(f.URL))
		case err != nil && (errors.Is(err, errSignInPage) || a.SignIn != nil && errors.Is(err, a.SignIn)):
			fmt.Fprintf(&b, "- %s: not saved (%s)\n", name, signInReason)
			if a.Log != nil {
				a.Log.WarnContext(ctx, "an attachment's download answered the sign-in page: add the files:read scope to the app",
					"file_id", f.ID, "channel_id", t.Event.ChannelID)
			}
		case err != nil:
			fmt.Fprintf(&b, "- %s: not saved (%s)\n", name, fsOpenReason(err))
		default:
			typ := attachType(f.MimeType, seen.sniffed())
			shown, why := attachShow(files, rel, typ, size)
			switch {
			case shown:
				out.Shown = append(out.Shown, Shown{Path: rel, Type: typ, Size: size, SHA256: seen.digest()})
				fmt.Fprintf(&b, "- %s (%d bytes, %s; shown to you below)\n", rel, size, typ)
			case why != "":
				fmt.Fprintf(&b, "- %s (%d bytes, %s; not shown to you: %s)\n", rel, size, typ, why)
			default:
				fmt.Fprintf(&b, "- %s (%d bytes, %s)\n", rel, size, typ)
			}
		}
	}
	out.Note = strings.TrimRight(b.String(), "\n")
	return out, nil
}

// attachHostReason says why a file whose address is not on the platform's
// file hosts was skipped, naming the host when it is a plain host name.
func attachHostReason(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Hostname() != "" && strings.Trim(u.Hostname(), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == "" {
		return "its address is on " + u.Hostname() + ", not on the chat platform's file hosts"
	}
	return "its address is not on the chat platform's file hosts"
}

// attachDirReason says why attachments/ could not be used.
func attachDirReason(err error) string {
	if errors.Is(err, errFsSymlink) {
		return attachDir + "/ in your workspace is a symlink: files are never saved through one; remove it to receive files"
	}
	return attachDir + "/ in your workspace " + fsOpenReason(err)
}

// attachSize shows a byte count, in MB from 1 MB on (to two decimals).
func attachSize(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%d bytes", n)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	}
	mb := strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/(1<<20)), "0")
	return strings.TrimSuffix(mb, ".") + " MB"
}

// attachName is the name an attachment is saved under: its own name
// cleaned (attachClean), else its platform id cleaned the same way, else
// "attachment". Neither is ever joined to a path unchecked.
func attachName(id, name string) string {
	if n := attachClean(name); n != "" {
		return n
	}
	if n := attachClean(id); n != "" {
		return n
	}
	return "attachment"
}

// attachClean makes s one safe file name: its last element (either slash
// separates), control and invalid characters as '_', without leading dots
// or spaces (no hidden file, no "..", no .env), cut to attachMaxName bytes
// keeping the extension; "" when nothing is left.
func attachClean(s string) string {
	s = strings.ToValidUTF8(s, "_")
	s = path.Base(strings.ReplaceAll(s, "\\", "/"))
	s = strings.Map(func(r rune) rune {
		if r == '/' || unicode.IsControl(r) || r == utf8.RuneError {
			return '_'
		}
		return r
	}, s)
	s = strings.TrimLeft(s, ". ")
	// The name is shown to the model outside the person's envelope too
	// (beside an image): it cannot open an envelope there either.
	s = pipeline.EscapeEnvelopes(s)
	if len(s) > attachMaxName {
		ext := path.Ext(s)
		if len(ext) > attachMaxName/4 {
			ext = ""
		}
		stem := s[:attachMaxName-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		s = stem + ext
	}
	if !filepath.IsLocal(s) {
		return ""
	}
	return s
}

// attachLine makes s fit on one line of the note: a person chose it, and
// a line break would let it pass for another line.
func attachLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(s, "_"))
}

// attachUnique makes name unique among the names of one message, so that
// two files of the same name are both kept.
func attachUnique(name string, used map[string]bool) string {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for k := 2; used[name]; k++ {
		name = fmt.Sprintf("%s-%d%s", stem, k, ext)
	}
	used[name] = true
	return name
}
