//go:build linux && cgo

package x11

import (
	"runtime"
	"sync"
)

// frame is a captured BGRX image and how to give its buffer back.
type frame struct {
	pix          []byte
	w, h, stride int
	release      func()
}

// scaleBGRX shrinks a BGRX image by scale (0,1] with an area filter: each
// output pixel is the exact coverage-weighted mean of the source pixels
// under it (OpenCV's INTER_AREA, ffmpeg's "area"), the alias-free way to
// downscale screens. It runs separably in 16.16 fixed point, output rows
// split across CPUs. The result is BGRX with X = 0xff.
func scaleBGRX(f *frame, scale float64) ([]byte, int, int, int) {
	dw, dh := max(1, int(float64(f.w)*scale)), max(1, int(float64(f.h)*scale))
	xs, ys := areaWeights(f.w, dw), areaWeights(f.h, dh)
	out := make([]byte, dw*dh*4)
	bands := min(runtime.GOMAXPROCS(0), 8, dh)
	var wg sync.WaitGroup
	for b := 0; b < bands; b++ {
		y0, y1 := dh*b/bands, dh*(b+1)/bands
		wg.Go(func() {
			row := make([]uint32, dw*3) // one source row, scaled horizontally (8 fraction bits)
			acc := make([]uint64, dw*3)
			for oy := y0; oy < y1; oy++ {
				clear(acc)
				for _, ty := range ys[oy] {
					src := f.pix[ty.i*f.stride : ty.i*f.stride+f.w*4]
					for ox, taps := range xs {
						var b, g, r uint32
						for _, tx := range taps {
							p := src[tx.i*4 : tx.i*4+3 : tx.i*4+3]
							b += uint32(p[0]) * tx.w
							g += uint32(p[1]) * tx.w
							r += uint32(p[2]) * tx.w
						}
						row[ox*3], row[ox*3+1], row[ox*3+2] = b>>8, g>>8, r>>8
					}
					w := uint64(ty.w)
					for i, v := range row {
						acc[i] += uint64(v) * w
					}
				}
				o := out[oy*dw*4 : (oy+1)*dw*4]
				for ox := 0; ox < dw; ox++ {
					// 8 + 16 fraction bits, rounded
					o[ox*4] = byte((acc[ox*3] + 1<<23) >> 24)
					o[ox*4+1] = byte((acc[ox*3+1] + 1<<23) >> 24)
					o[ox*4+2] = byte((acc[ox*3+2] + 1<<23) >> 24)
					o[ox*4+3] = 0xff
				}
			}
		})
	}
	wg.Wait()
	return out, dw, dh, dw * 4
}

type tap struct {
	i int
	w uint32 // 16.16 weight; an output pixel's weights sum to 1<<16
}

// areaWeights maps n source pixels onto m output pixels (m <= n).
func areaWeights(n, m int) [][]tap {
	out := make([][]tap, m)
	ratio := float64(n) / float64(m)
	for o := 0; o < m; o++ {
		x0, x1 := float64(o)*ratio, float64(o+1)*ratio
		var taps []tap
		sum, big := uint32(0), 0
		for i := int(x0); i < n && float64(i) < x1; i++ {
			cover := min(x1, float64(i+1)) - max(x0, float64(i))
			w := uint32(cover/ratio*65536 + 0.5)
			if w == 0 {
				continue
			}
			if len(taps) > 0 && w > taps[big].w {
				big = len(taps)
			}
			taps = append(taps, tap{i: i, w: w})
			sum += w
		}
		taps[big].w += 65536 - sum // exact unit sum despite rounding
		out[o] = taps
	}
	return out
}
