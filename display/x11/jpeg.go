//go:build linux && cgo

package x11

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>

struct dh_err {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

static void dh_error_exit(j_common_ptr cinfo) {
	struct dh_err *e = (struct dh_err *)cinfo->err;
	(*cinfo->err->format_message)(cinfo, e->msg);
	longjmp(e->jb, 1);
}

// dh_encode_bgrx compresses a BGRX (X's 32-bit ZPixmap on little-endian)
// buffer without converting it first: libjpeg-turbo reads JCS_EXT_BGRX.
static int dh_encode_bgrx(unsigned char *pix, int w, int h, int stride, int quality,
                          unsigned char **out, unsigned long *outlen, char *errbuf, int errlen) {
	struct jpeg_compress_struct c;
	struct dh_err e;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = dh_error_exit;
	*out = NULL;
	*outlen = 0;
	if (setjmp(e.jb)) {
		jpeg_destroy_compress(&c);
		if (*out) { free(*out); *out = NULL; }
		strncpy(errbuf, e.msg, errlen - 1);
		errbuf[errlen - 1] = 0;
		return -1;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, out, outlen);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 4;
	c.in_color_space = JCS_EXT_BGRX;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, quality, TRUE);
	// the fast integer DCT is visibly worse only near quality 100
	c.dct_method = quality > 90 ? JDCT_ISLOW : JDCT_IFAST;
	jpeg_start_compress(&c, TRUE);
	JSAMPROW rows[32];
	while (c.next_scanline < c.image_height) {
		int n = 0;
		while (n < 32 && c.next_scanline + n < c.image_height) {
			rows[n] = pix + (size_t)(c.next_scanline + n) * stride;
			n++;
		}
		jpeg_write_scanlines(&c, rows, n);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return 0;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// encodeJPEG compresses a BGRX image with libjpeg-turbo. pix must not be
// Go memory that holds Go pointers (it is plain bytes: SHM or a []byte).
func encodeJPEG(pix []byte, w, h, stride, quality int) ([]byte, error) {
	if w <= 0 || h <= 0 || len(pix) < (h-1)*stride+w*4 {
		return nil, errors.New("jpeg: buffer smaller than the image")
	}
	var out *C.uchar
	var n C.ulong
	var errbuf [200]C.char
	rc := C.dh_encode_bgrx((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), C.int(stride), C.int(quality),
		&out, &n, &errbuf[0], C.int(len(errbuf)))
	if rc != 0 {
		return nil, errors.New("jpeg: " + C.GoString(&errbuf[0]))
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}
