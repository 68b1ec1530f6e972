package sim

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"path"
	"strings"
	"sync"
)

// The files a scenario's send attaches (`files: [chart.png, spec.pdf]`):
// each is made from its name's extension, the same bytes on every run, so
// that a transcript shows the same sizes. An image is a small real image
// of its format, a PDF a one-page PDF, anything else a line of text.

// sampleTypes are the types the platform gives files by their extension;
// a fixed table, not the system's (mime.TypeByExtension reads it), so
// that transcripts are the same everywhere. Other files are text.
var sampleTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".pdf": "application/pdf", ".html": "text/html", ".htm": "text/html", ".csv": "text/csv", ".md": "text/markdown",
	".json": "application/json",
}

// SampleFile returns the type the platform gives a file named name (by its
// extension, as the platform does) and its content.
func SampleFile(name string) (mimeType string, content []byte) {
	ext := strings.ToLower(path.Ext(name))
	mimeType, ok := sampleTypes[ext]
	if !ok {
		mimeType = "text/plain"
	}
	switch ext {
	case ".png", ".jpg", ".jpeg", ".gif":
		return mimeType, bytes.Clone(sampleImages()[ext])
	case ".webp":
		b, _ := base64.StdEncoding.DecodeString(sampleWebP)
		return mimeType, b
	case ".pdf":
		return mimeType, []byte(samplePDF)
	case ".html", ".htm":
		return mimeType, []byte("<!DOCTYPE html>\n<html><body><p>simulated page " + name + "</p></body></html>\n")
	}
	return mimeType, []byte("simulated file " + name + "\n")
}

// samplePDF is a one-page PDF.
const samplePDF = "%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n" +
	"2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n" +
	"3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200]>> endobj\n" +
	"trailer <</Root 1 0 R>>\n%%EOF\n"

// sampleWebP is a 1×1 lossless WebP image (the standard library has no
// WebP encoder).
const sampleWebP = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="

// sampleImages are sampleImage's images by extension, encoded once per
// process: an encoder's state outweighs the image many times over (the
// PNG encoder's compressor alone is hundreds of KiB), and a scenario
// attaches a few.
var sampleImages = sync.OnceValue(func() map[string][]byte {
	m := map[string][]byte{}
	for _, ext := range []string{".png", ".jpg", ".jpeg", ".gif"} {
		m[ext] = sampleImage(ext)
	}
	return m
})

// sampleImage is a 4×3 image with a diagonal, encoded in the format of ext.
func sampleImage(ext string) []byte {
	img := image.NewPaletted(image.Rect(0, 0, 4, 3), []color.Color{color.White, color.Black})
	for i := range 3 {
		img.SetColorIndex(i, i, 1)
	}
	var b bytes.Buffer
	switch ext {
	case ".png":
		_ = png.Encode(&b, img)
	case ".gif":
		_ = gif.Encode(&b, img, nil)
	default:
		_ = jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
	}
	return b.Bytes()
}
