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
// are saved, each at most MaxBytes, and the files of all threads together
// stay within Quota; the others are named as skipped. A
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
	// Quota, when set, holds the attachments of all threads to its
	// total: a file that would pass it is not saved (nor kept in part) and
	// is named as skipped.
	Quota *AttachQuota
	// Skipped, when set, is told of each file skipped, by reason: "files"
	// (past MaxFiles), "size" (past MaxBytes) or "quota"
	// (metrics.AttachmentSkipReasons counts them).
	Skipped func(reason string)
	// Log, when set, is told of a sign-in page met (the operator has to
	// add the scope) and of a file skipped for the quota; the person only
	// sees the model's answer.
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
			a.skipped("files")
			continue
		case f.Size > maxBytes:
			fmt.Fprintf(&b, "- %s: skipped (%s, over the limit of %s per file)\n", name, attachSize(f.Size), attachSize(maxBytes))
			a.skipped("size")
			continue
		case dirErr != nil:
			fmt.Fprintf(&b, "- %s: not saved (%s)\n", name, attachDirReason(dirErr))
			continue
		case a.Quota != nil && !a.Quota.fits(f.Size):
			a.overQuota(ctx, &b, t, f, name)
			continue
		}
		name = attachUnique(name, used)
		rel := path.Join(attachDir, name)
		seen := newAttachSeen()
		var qw *quotaWriter
		var replaced int64 // the size of the file of that name the new one replaces
		if a.Quota != nil {
			if fi, err := files.Lstat(rel); err == nil && fi.Mode().IsRegular() {
				replaced = fi.Size()
			}
		}
		size, err := files.Save(rel, 0o600, func(w io.Writer) error {
			if a.Quota != nil {
				qw = &quotaWriter{q: a.Quota, w: w}
				w = qw
			}
			if _, err := a.Download.DownloadTo(ctx, f, io.MultiWriter(w, seen), maxBytes); err != nil {
				return err
			}
			if seen.html() && !f.IsHTML() && !attachTextual(f.MimeType) {
				return errSignInPage
			}
			return nil
		})
		switch {
		case err != nil && qw != nil:
			a.Quota.release(qw.took) // nothing of it is left
		case err == nil && replaced > 0:
			a.Quota.release(replaced)
		}
		switch {
		case err != nil && qw != nil && qw.over:
			a.overQuota(ctx, &b, t, f, name)
		case err != nil && a.TooLarge != nil && errors.Is(err, a.TooLarge):
			fmt.Fprintf(&b, "- %s: skipped (over the limit of %s per file)\n", name, attachSize(maxBytes))
			a.skipped("size")
		case err != nil && a.Host != nil && errors.Is(err, a.Host):
			fmt.Fprintf(&b, "- %s: skipped (%s)\n", name, attachHostReason(f.URL))
			a.skipped("host")
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

// skipped counts a file skipped for reason.
func (a *Attachments) skipped(reason string) {
	if a.Skipped != nil {
		a.Skipped(reason)
	}
}

// overQuota names f, which would take the attachments of all threads past
// the quota, as skipped, and tells the operator: nothing else of the
// persona stops, but no file is saved until old ones are pruned
// (AGENT_ATTACHMENTS_KEEP) or the quota raised.
func (a *Attachments) overQuota(ctx context.Context, b *strings.Builder, t *pipeline.Turn, f pipeline.File, name string) {
	if f.Size > 0 {
		fmt.Fprintf(b, "- %s: skipped (%s, over the quota of %s for the attachments of all threads)\n", name, attachSize(f.Size), attachSize(a.Quota.Max()))
	} else {
		fmt.Fprintf(b, "- %s: skipped (over the quota of %s for the attachments of all threads)\n", name, attachSize(a.Quota.Max()))
	}
	a.skipped("quota")
	if a.Log != nil {
		a.Log.WarnContext(ctx, "an attachment is skipped: the attachments of all threads are at their quota (AGENT_ATTACHMENTS_MAX_GB)",
			"file_id", f.ID, "channel_id", t.Event.ChannelID, "size", f.Size, "used", a.Quota.Used(), "quota", a.Quota.Max())
	}
}

// NotSaved is what becomes of the files of t's message when none may be
// saved (the turn was refused before it ran): each is named with why.
func NotSaved(t *pipeline.Turn, why string) Attached {
	if len(t.Event.Files) == 0 {
		return Attached{}
	}
	var b strings.Builder
	b.WriteString("Files attached to this message, not saved:\n")
	for _, f := range t.Event.Files {
		fmt.Fprintf(&b, "- %s: not saved (%s)\n", attachName(f.ID, f.Name), why)
	}
	return Attached{Note: strings.TrimRight(b.String(), "\n")}
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

// attachSize shows a byte count, in MB from 1 MB on and in GB from 1 GB
// on (to two decimals).
func attachSize(n int64) string {
	unit, shift := "MB", 20
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%d bytes", n)
	case n >= 1<<30:
		unit, shift = "GB", 30
	}
	if n%(1<<shift) == 0 {
		return fmt.Sprintf("%d %s", n>>shift, unit)
	}
	v := strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/float64(int64(1)<<shift)), "0")
	return strings.TrimSuffix(v, ".") + " " + unit
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
