package tools

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// webpHeader is a WebP file's first 30 bytes with chunk fourcc and data.
func webpHeader(fourcc string, data []byte) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBP" + fourcc + "\x00\x00\x00\x00")
	b = append(b, data...)
	return append(b, make([]byte, 30)...)[:30]
}

// The three forms of WebP's first chunk give the image's size.
func TestWebpSize(t *testing.T) {
	vp8x := make([]byte, 10)
	vp8x[4], vp8x[5], vp8x[6] = 0x3f, 0x1f, 0x00 // width-1 = 7999
	vp8x[7], vp8x[8], vp8x[9] = 0x40, 0x1f, 0x00 // height-1 = 8000
	var bits uint32 = 299 | 199<<14              // 300×200
	vp8l := []byte{0x2f, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(vp8l[1:], bits)
	vp8 := []byte{0, 0, 0, 0x9d, 0x01, 0x2a, 0, 0, 0, 0}
	binary.LittleEndian.PutUint16(vp8[6:], 640)
	binary.LittleEndian.PutUint16(vp8[8:], 480)
	for _, c := range []struct {
		name string
		head []byte
		w, h int
		ok   bool
	}{
		{"extended", webpHeader("VP8X", vp8x), 8000, 8001, true},
		{"lossless", webpHeader("VP8L", vp8l), 300, 200, true},
		{"lossy", webpHeader("VP8 ", vp8), 640, 480, true},
		{"not webp", []byte("RIFF\x00\x00\x00\x00WAVEfmt " + string(make([]byte, 20))), 0, 0, false},
		{"short", []byte("RIFF"), 0, 0, false},
	} {
		w, h, err := webpSize(bytes.NewReader(c.head))
		if (err == nil) != c.ok || w != c.w || h != c.h {
			t.Errorf("%s: %d×%d, %v; want %d×%d (ok %v)", c.name, w, h, err, c.w, c.h, c.ok)
		}
	}
}
