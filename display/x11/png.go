//go:build linux && cgo

package x11

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
)

// encodePNG writes a BGRX image as an 8-bit RGB PNG. It is tuned for
// screens rather than photos: the Sub filter (flat areas become zero runs),
// klauspost's fastest deflate level, and the rows split into one band per
// CPU compressed in parallel, each band ending on a sync flush so the
// pieces concatenate into one valid zlib stream (the pigz technique).
func encodePNG(pix []byte, w, h, stride int) ([]byte, error) {
	bands := runtime.GOMAXPROCS(0)
	if bands > 8 {
		bands = 8
	}
	if h < bands*16 {
		bands = 1
	}
	type band struct {
		data  []byte
		adler uint32
		n     int64
		err   error
	}
	out := make([]band, bands)
	var wg sync.WaitGroup
	for b := 0; b < bands; b++ {
		y0, y1 := h*b/bands, h*(b+1)/bands
		wg.Go(func() {
			rowLen := 1 + w*3
			raw := make([]byte, rowLen*(y1-y0))
			for y := y0; y < y1; y++ {
				filterSubBGRX(raw[(y-y0)*rowLen:(y-y0+1)*rowLen], pix[y*stride:y*stride+w*4])
			}
			var buf bytes.Buffer
			buf.Grow(len(raw) / 8)
			fw := flatePool.Get().(*flate.Writer)
			fw.Reset(&buf)
			_, err := fw.Write(raw)
			if err == nil {
				if b == bands-1 {
					err = fw.Close()
				} else {
					err = fw.Flush()
				}
			}
			flatePool.Put(fw)
			out[b] = band{data: buf.Bytes(), adler: adler32.Checksum(raw), n: int64(len(raw)), err: err}
		})
	}
	wg.Wait()

	size := 0
	adler := uint32(1)
	for i, b := range out {
		if b.err != nil {
			return nil, b.err
		}
		size += len(b.data)
		if i == 0 {
			adler = b.adler
		} else {
			adler = adler32Combine(adler, b.adler, b.n)
		}
	}
	png := make([]byte, 0, size+128)
	png = append(png, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit truecolour
	png = appendChunk(png, "IHDR", ihdr[:])

	// IDAT: zlib header (deflate, 32K window, fastest), bands, adler32
	idat := make([]byte, 0, size+6)
	idat = append(idat, 0x78, 0x01)
	for _, b := range out {
		idat = append(idat, b.data...)
	}
	idat = binary.BigEndian.AppendUint32(idat, adler)
	png = appendChunk(png, "IDAT", idat)
	png = appendChunk(png, "IEND", nil)
	return png, nil
}

var flatePool = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

func appendChunk(dst []byte, typ string, data []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
	start := len(dst)
	dst = append(dst, typ...)
	dst = append(dst, data...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// filterSubBGRX writes one PNG row (filter byte 1 = Sub) of RGB from BGRX.
func filterSubBGRX(dst, src []byte) {
	dst[0] = 1
	d := dst[1:]
	var pr, pg, pb byte
	n := len(src) / 4
	_ = d[n*3-1]
	for i := 0; i < n; i++ {
		s := src[i*4 : i*4+3 : i*4+3]
		r, g, b := s[2], s[1], s[0]
		o := d[i*3 : i*3+3 : i*3+3]
		o[0], o[1], o[2] = r-pr, g-pg, b-pb
		pr, pg, pb = r, g, b
	}
}

// adler32Combine is zlib's adler32_combine: the checksum of A||B from
// those of A and B and B's length.
func adler32Combine(a1, a2 uint32, len2 int64) uint32 {
	const base = 65521
	rem := uint32(len2 % base)
	sum1 := a1 & 0xffff
	sum2 := (rem * sum1) % base
	sum1 += (a2 & 0xffff) + base - 1
	sum2 += (a1 >> 16) + (a2 >> 16) + base - rem
	if sum1 >= base {
		sum1 -= base
	}
	if sum1 >= base {
		sum1 -= base
	}
	if sum2 >= base<<1 {
		sum2 -= base << 1
	}
	if sum2 >= base {
		sum2 -= base
	}
	return sum1 | sum2<<16
}
