package terminal

// ring keeps the last max bytes of a session's output. It grows on demand up
// to max, so an idle session with little output holds little memory.
// Offsets are absolute: total counts every byte ever written.
type ring struct {
	data  []byte
	max   int
	w     int // next write index once full
	full  bool
	total int64
}

func (r *ring) grow(n int) {
	if cap(r.data) >= n {
		return
	}
	c := max(2*cap(r.data), n, 4096)
	c = min(c, r.max)
	nd := make([]byte, len(r.data), c)
	copy(nd, r.data)
	r.data = nd
}

func (r *ring) write(p []byte) {
	r.total += int64(len(p))
	if len(p) >= r.max {
		r.grow(r.max)
		r.data = r.data[:r.max]
		copy(r.data, p[len(p)-r.max:])
		r.w, r.full = 0, true
		return
	}
	if !r.full {
		if len(r.data)+len(p) < r.max {
			r.grow(len(r.data) + len(p))
			r.data = append(r.data, p...)
			return
		}
		n := r.max - len(r.data)
		r.grow(r.max)
		r.data = append(r.data, p[:n]...)
		r.w, r.full = 0, true
		p = p[n:]
	}
	for len(p) > 0 {
		n := copy(r.data[r.w:], p)
		r.w = (r.w + n) % r.max
		p = p[n:]
	}
}

// oldest is the absolute offset of the first byte still held.
func (r *ring) oldest() int64 { return r.total - int64(len(r.data)) }

// since copies the bytes from absolute offset from (clamped to what is held).
func (r *ring) since(from int64) []byte { return r.span(from, -1) }

// span copies at most n bytes (all when n < 0) from absolute offset from,
// clamped to what is held.
func (r *ring) span(from int64, n int) []byte {
	from = max(from, r.oldest())
	if from >= r.total {
		return nil
	}
	size := int(r.total - from)
	if n >= 0 && n < size {
		size = n
	}
	skip := int(from - r.oldest())
	out := make([]byte, size)
	if !r.full {
		copy(out, r.data[skip:])
		return out
	}
	first, second := r.data[r.w:], r.data[:r.w]
	if skip < len(first) {
		k := copy(out, first[skip:])
		copy(out[k:], second)
		return out
	}
	copy(out, second[skip-len(first):])
	return out
}
