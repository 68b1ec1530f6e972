package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

const (
	// fsReadLines is how many lines Read returns when the call sets no
	// limit, as the well-known Read tool does.
	fsReadLines = 2000
	// fsMaxLineRunes is where Read and Grep cut a long line (minified
	// files, data dumps): 2000 characters, as the well-known Read tool.
	fsMaxLineRunes = 2000
	// fsSniffBytes is how much of a file is looked at for a NUL byte to
	// call it binary: git's buffer_is_binary looks at the first 8000.
	fsSniffBytes = 8000
	// fsMaxEditBytes caps the files Edit loads whole into memory; source
	// and notes are far smaller, and a bigger file is better edited with
	// Bash (sed) than pasted through the model anyway.
	fsMaxEditBytes = 10 << 20
)

// read is the Read tool.
func (b *Builtins) read(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		FilePath string `json:"file_path"`
		Offset   int    `json:"offset"`
		Limit    int    `json:"limit"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	if in.FilePath == "" {
		return Errorf("file_path is required")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return Errorf("offset and limit must be positive")
	}
	offset, limit := max(in.Offset, 1), in.Limit
	if limit == 0 {
		limit = fsReadLines
	}
	t, f, fi, res := b.openThreadFile(ctx, in.FilePath)
	if res != nil {
		return *res
	}
	real := t.path
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(fsSniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return Errorf("%s is a binary file (%d bytes): Read shows text files only (try Bash with file or xxd)", real, fi.Size())
	}

	var out strings.Builder
	lineNo, shown, cut := 0, 0, 0
	var note string
	for {
		if lineNo%4096 == 0 && ctx.Err() != nil {
			return Errorf("read cancelled")
		}
		line, long, err := fsReadLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return Errorf("read %s: %s", real, fsErrText(err))
		}
		if len(line) == 0 && err != nil {
			break // end of file
		}
		lineNo++
		if lineNo >= offset {
			if shown == limit {
				note = fmt.Sprintf("[showing lines %d-%d; the file goes on: read on with offset %d]", offset, lineNo-1, lineNo)
				break
			}
			text := fmt.Sprintf("%6d\t%s\n", lineNo, b.scrub(line))
			if out.Len() > 0 && out.Len()+len(text) > b.maxOutput {
				note = fmt.Sprintf("[output truncated at %d bytes: showing lines %d-%d; read on with offset %d]", b.maxOutput, offset, lineNo-1, lineNo)
				break
			}
			out.WriteString(text)
			shown++
			if long {
				cut++
			}
		}
		if err != nil {
			break
		}
	}
	switch {
	case lineNo == 0:
		return Result{Text: fmt.Sprintf("(%s is empty)", real)}
	case shown == 0 && note == "":
		return Errorf("offset %d is past the end of %s, which has %d lines", offset, real, lineNo)
	}
	if cut > 0 {
		fmt.Fprintf(&out, "[%d line(s) longer than %d characters were cut]\n", cut, fsMaxLineRunes)
	}
	if note != "" {
		out.WriteString(note + "\n")
	}
	return Result{Text: out.String()}
}

// fsReadLine reads one line without its newline, keeping at most
// fsMaxLineRunes characters of it (long reports a cut), so a huge line
// costs no memory.
func fsReadLine(br *bufio.Reader) (line string, long bool, err error) {
	const keep = fsMaxLineRunes*utf8.UTFMax + 1
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if room := keep - len(buf); room > 0 {
			buf = append(buf, frag[:min(len(frag), room)]...)
		} else {
			long = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line, cut := fsCutLine(bytes.TrimSuffix(buf, []byte("\n")))
		return line, long || cut, err
	}
}

// fsCutLine returns line cut to fsMaxLineRunes characters, and whether it
// was cut.
func fsCutLine(line []byte) (string, bool) {
	if len(line) <= fsMaxLineRunes {
		return string(line), false
	}
	n := 0
	for i := range string(line) {
		if n == fsMaxLineRunes {
			return string(line[:i]), true
		}
		n++
	}
	return string(line), false
}

// openThreadFile resolves p for the turn in ctx and opens it for reading,
// a regular file only; res is the refusal the model reads.
func (b *Builtins) openThreadFile(ctx context.Context, p string) (t fsTarget, f *os.File, fi fs.FileInfo, res *Result) {
	if t, res = b.threadPath(ctx, p); res != nil {
		return t, nil, nil, res
	}
	f, fi, err := fsOpenRegular(t)
	if err != nil {
		r := Errorf("%v", err)
		return t, nil, nil, &r
	}
	return t, f, fi, nil
}

// fsOpenRegular opens the checked path t for reading, through the root of
// its folder, refusing what is not a regular file (a FIFO would block, a
// device never ends) and a path that changed since the check.
func fsOpenRegular(t fsTarget) (*os.File, fs.FileInfo, error) {
	f, fi, err := t.in.Open(t.rel)
	switch {
	case err == nil:
		return f, fi, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("file %s does not exist", t.path)
	case errors.Is(err, errFsIsDir):
		return nil, nil, fmt.Errorf("%s is a folder: use LS or Glob to see what it holds", t.path)
	}
	return nil, nil, fmt.Errorf("%s %s", t.path, fsOpenReason(err))
}

// write is the Write tool.
func (b *Builtins) write(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		FilePath string  `json:"file_path"`
		Content  *string `json:"content"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	if in.FilePath == "" || in.Content == nil {
		return Errorf("file_path and content are required")
	}
	t, res := b.threadPath(ctx, in.FilePath)
	if res != nil {
		return *res
	}
	real := t.path
	perm := fs.FileMode(0o644)
	verb := "created"
	switch fi, err := t.in.Lstat(t.rel); {
	case err == nil && fi.IsDir():
		return Errorf("%s is a folder, not a file", real)
	case err == nil && !fi.Mode().IsRegular():
		return Errorf("%s is not a regular file", real)
	case err == nil:
		perm, verb = fi.Mode().Perm(), "wrote"
	case !errors.Is(err, fs.ErrNotExist):
		return Errorf("%s: %s", real, fsErrText(err))
	}
	if err := t.in.MkdirAll(filepath.Dir(t.rel), 0o755); err != nil {
		return Errorf("create the folders of %s: %s", real, fsOpenReason(err))
	}
	if err := t.in.WriteFile(t.rel, []byte(*in.Content), perm); err != nil {
		return Errorf("write %s: %s", real, fsOpenReason(err))
	}
	return Result{Text: fmt.Sprintf("%s %s (%d bytes)", verb, real, len(*in.Content))}
}

// edit is the Edit tool.
func (b *Builtins) edit(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		FilePath   string  `json:"file_path"`
		OldString  *string `json:"old_string"`
		NewString  *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	if in.FilePath == "" || in.OldString == nil || in.NewString == nil {
		return Errorf("file_path, old_string and new_string are required")
	}
	if *in.OldString == "" {
		return Errorf("old_string is empty: to create or overwrite a file use Write")
	}
	if *in.OldString == *in.NewString {
		return Errorf("old_string and new_string are the same: nothing to change")
	}
	t, f, fi, res := b.openThreadFile(ctx, in.FilePath)
	if res != nil {
		return *res
	}
	real := t.path
	if fi.Size() > fsMaxEditBytes {
		f.Close()
		return Errorf("%s is %d bytes: Edit handles files up to %d bytes; use Bash (sed) instead", real, fi.Size(), fsMaxEditBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, fsMaxEditBytes+1))
	f.Close()
	if err != nil {
		return Errorf("read %s: %s", real, fsErrText(err))
	}
	if bytes.IndexByte(data[:min(len(data), fsSniffBytes)], 0) >= 0 {
		return Errorf("%s is a binary file: Edit changes text files only", real)
	}
	content := string(data)
	n := strings.Count(content, *in.OldString)
	switch {
	case n == 0:
		return Errorf("old_string was not found in %s: it must match the file exactly, indentation and line breaks included (Read the file first)", real)
	case n > 1 && !in.ReplaceAll:
		return Errorf("old_string occurs %d times in %s: include more surrounding lines to make it unique, or set replace_all to change all %d", n, real, n)
	}
	if in.ReplaceAll {
		content = strings.ReplaceAll(content, *in.OldString, *in.NewString)
	} else {
		content = strings.Replace(content, *in.OldString, *in.NewString, 1)
	}
	if err := t.in.WriteFile(t.rel, []byte(content), fi.Mode().Perm()); err != nil {
		return Errorf("write %s: %s", real, fsOpenReason(err))
	}
	return Result{Text: fmt.Sprintf("replaced %d occurrence(s) in %s", n, real)}
}
