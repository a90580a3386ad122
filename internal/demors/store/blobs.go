package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/png"
	"strings"
)

// seedBlob is one generated attachment.
type seedBlob struct {
	id, mediaType, filename, sha256 string
	bytes                           []byte
}

// makeBlob builds the deterministic bytes of one attachment. PNGs are noise images (small
// ones are a few KB; the large one about 300 KB, since noise does not compress); PDFs
// are single-page documents of generated text lines.
func makeBlob(owner, filename, mediaType string, large bool) seedBlob {
	var data []byte
	switch mediaType {
	case "image/png":
		side := 40
		if large {
			side = 316
		}
		data = noisePNG(owner, side)
	case "application/pdf":
		data = textPDF(owner, filename)
	default:
		panic("store: unsupported seed media type " + mediaType)
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	return seedBlob{
		id:        "blob_" + hexsum[:24],
		mediaType: mediaType,
		filename:  filename,
		sha256:    hexsum,
		bytes:     data,
	}
}

func noisePNG(owner string, side int) []byte {
	r := rng("blob", owner)
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	for i := 0; i < len(img.Pix); i += 4 {
		v := r.Uint32()
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(v), uint8(v>>8), uint8(v>>16), 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic("store: encode seed png: " + err.Error())
	}
	return buf.Bytes()
}

// textPDF writes a minimal one-page PDF 1.4 document with a correct xref table.
func textPDF(owner, filename string) []byte {
	r := rng("blob", owner)
	var content strings.Builder
	content.WriteString("BT /F1 11 Tf 56 780 Td 14 TL\n")
	fmt.Fprintf(&content, "(%s) Tj T*\n", filename)
	for range 40 + r.IntN(20) {
		var line strings.Builder
		writeSentence(&line, r, natoWords)
		fmt.Fprintf(&content, "(%s) Tj T*\n", strings.TrimSuffix(line.String(), "."))
	}
	content.WriteString("ET\n")
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var buf bytes.Buffer
	buf.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, obj := range objects {
		offsets[i] = buf.Len()
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", i+1, obj)
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return buf.Bytes()
}
