package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
)

// The files the model sees besides reading their note: images and PDFs,
// sent as the Messages API's image and document content blocks
// (interfaces.md, "Eyes"). The limits are the API's: it refuses an image
// whose base64 form is over 5 MB (so 3.75 MB of file) or wider or taller
// than 8000 pixels; a PDF is pinned at 10 MB (the API takes requests up to
// 32 MB, and a PDF's pages cost tokens as text and as images).
const (
	// MaxShownImageBytes is the largest image shown: 5 MiB once encoded
	// in base64 (4 characters per 3 bytes).
	MaxShownImageBytes = 5 << 20 / 4 * 3
	// MaxShownPDFBytes is the largest PDF shown.
	MaxShownPDFBytes = 10 << 20
	// MaxShownImagePixels is the largest width or height of an image shown.
	MaxShownImagePixels = 8000
)

// ShownTypes are the types of the files the model sees, as its API names
// them.
var ShownTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}

// Shown is a saved attachment the model sees as an image or a document.
// What the history keeps of it is this reference, not its bytes:
// Attachments.Load reads them back from the workspace for each request.
type Shown struct {
	// Path is where it is in the thread's workspace: attachments/<name>.
	Path string
	// Type is one of ShownTypes: what its bytes are, whatever the platform
	// called it.
	Type string
	Size int64
	// SHA256 is the hex digest of the bytes saved.
	SHA256 string
}

// IsPDF reports whether s is shown as a document rather than an image.
func (s Shown) IsPDF() bool { return s.Type == "application/pdf" }

// maxShownBytes is the largest file of type typ that is shown; 0 for a
// type that never is.
func maxShownBytes(typ string) int64 {
	switch {
	case typ == "application/pdf":
		return MaxShownPDFBytes
	case slices.Contains(ShownTypes, typ):
		return MaxShownImageBytes
	}
	return 0
}

// ErrAttachmentChanged is Load's error for a file that is no longer as it
// was saved: changed, replaced or truncated since.
var ErrAttachmentChanged = errors.New("is no longer the file that was attached (changed since)")

// Load reads back, through the workspace's root, a file that Save showed
// in threadKey's thread, if it is still as it was saved (ErrAttachmentChanged
// otherwise). Only a file directly in attachments/, of a shown type and
// within that type's limit, is read: s may come from a stored history.
func (a *Attachments) Load(threadKey string, s Shown) ([]byte, error) {
	dir, name := path.Split(s.Path)
	limit := maxShownBytes(s.Type)
	switch {
	case dir != attachDir+"/" || name == "" || attachClean(name) != name:
		return nil, fmt.Errorf("%s is not an attachment's path", s.Path)
	case limit == 0:
		return nil, fmt.Errorf("%s: %s files are not shown", s.Path, s.Type)
	case s.Size < 0 || s.Size > limit:
		return nil, fmt.Errorf("%s: %d bytes is over the limit of %d for %s", s.Path, s.Size, limit, s.Type)
	}
	ws, err := a.Workspace(threadKey)
	if err != nil {
		return nil, fmt.Errorf("attachments: %w", err)
	}
	f, info, err := Confined{Dir: ws}.Open(s.Path)
	if err != nil {
		return nil, fmt.Errorf("%s %s", s.Path, fsOpenReason(err))
	}
	defer f.Close()
	if info.Size() != s.Size {
		return nil, fmt.Errorf("%s %w", s.Path, ErrAttachmentChanged)
	}
	data, err := io.ReadAll(io.LimitReader(f, s.Size+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.Path, err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != s.Size || hex.EncodeToString(sum[:]) != s.SHA256 {
		return nil, fmt.Errorf("%s %w", s.Path, ErrAttachmentChanged)
	}
	return data, nil
}

// attachSniffLen is how much of a file's start its type is read from
// (http.DetectContentType reads no more).
const attachSniffLen = 512

// attachSeen watches a file's bytes go by on their way to disk: it keeps
// their start, to tell their type by their magic numbers, and their digest.
type attachSeen struct {
	head []byte
	sum  hash.Hash
}

func newAttachSeen() *attachSeen { return &attachSeen{sum: sha256.New()} }

func (s *attachSeen) Write(p []byte) (int, error) {
	if n := attachSniffLen - len(s.head); n > 0 {
		s.head = append(s.head, p[:min(n, len(p))]...)
	}
	return s.sum.Write(p)
}

// sniffed is the type the file's bytes say it is (http.DetectContentType:
// the WHATWG sniffing rules, magic numbers first).
func (s *attachSeen) sniffed() string { return http.DetectContentType(s.head) }

// html reports whether the bytes are an HTML page.
func (s *attachSeen) html() bool { return strings.HasPrefix(s.sniffed(), "text/html") }

func (s *attachSeen) digest() string { return hex.EncodeToString(s.sum.Sum(nil)) }

// attachType is the type the note gives a saved file: what its bytes are
// when they are an image or a PDF (a screenshot the platform calls
// application/octet-stream is an image; a ".png" holding a PDF is a PDF),
// else what the platform called it, else what the bytes look like.
func attachType(declared, sniffed string) string {
	if slices.Contains(ShownTypes, sniffed) {
		return sniffed
	}
	if declared != "" {
		return attachLine(declared)
	}
	return sniffed
}

// attachTextual reports whether the platform calls a file text, which may
// well begin like an HTML page (a snippet, a template, a notebook): only
// a file that is not text is refused for HTML bytes. (A real platform's
// sign-in page is also caught by its answer's type, slackio.)
func attachTextual(mimeType string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(mimeType), ";")
	mt = strings.TrimSpace(mt)
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-sh", "application/yaml",
		"application/x-yaml", "application/sql", "application/x-httpd-php", "application/x-python":
		return true
	}
	return strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+xml") || strings.HasSuffix(mt, "+json")
}

// attachShow decides whether the file saved at rel, of type typ and size
// bytes, is shown to the model; when it is of a shown type yet is not,
// why says why.
func attachShow(files Confined, rel, typ string, size int64) (shown bool, why string) {
	limit := maxShownBytes(typ)
	switch {
	case limit == 0:
		return false, ""
	case size > limit && typ == "application/pdf":
		return false, fmt.Sprintf("too large, PDFs are shown up to %s", attachSize(limit))
	case size > limit:
		return false, fmt.Sprintf("too large, images are shown up to %s", attachSize(limit))
	case typ == "application/pdf":
		return true, ""
	}
	w, h, err := imageSize(files, rel, typ)
	switch {
	case err != nil:
		return false, "not a readable " + typ + " image"
	case w > MaxShownImagePixels || h > MaxShownImagePixels:
		return false, fmt.Sprintf("%d×%d pixels, over the limit of %d on a side", w, h, MaxShownImagePixels)
	}
	return true, ""
}

// imageSize reads an image's width and height from its header, through the
// workspace's root.
func imageSize(files Confined, rel, typ string) (int, int, error) {
	f, _, err := files.Open(rel)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var c image.Config
	switch typ {
	case "image/png":
		c, err = png.DecodeConfig(f)
	case "image/jpeg":
		c, err = jpeg.DecodeConfig(f)
	case "image/gif":
		c, err = gif.DecodeConfig(f)
	case "image/webp":
		return webpSize(f)
	default:
		err = fmt.Errorf("%s is not an image type", typ)
	}
	return c.Width, c.Height, err
}

// webpSize reads a WebP image's size from its first chunk (the standard
// library has no WebP decoder): VP8X (extended: 24-bit sizes less one),
// VP8L (lossless: 14-bit sizes less one) or VP8 (lossy: 14-bit sizes
// after the key frame's start code).
func webpSize(r io.Reader) (int, int, error) {
	var b [30]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, fmt.Errorf("webp header: %w", err)
	}
	if string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, errors.New("not a webp file")
	}
	u24 := func(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
	switch string(b[12:16]) {
	case "VP8X":
		return u24(b[24:27]) + 1, u24(b[27:30]) + 1, nil
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, errors.New("webp: bad lossless signature")
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, nil
	case "VP8 ":
		if !bytes.Equal(b[23:26], []byte{0x9d, 0x01, 0x2a}) {
			return 0, 0, errors.New("webp: bad key frame start code")
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), nil
	}
	return 0, 0, errors.New("webp: unknown first chunk")
}
