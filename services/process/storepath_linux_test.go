package process_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"deckhand/platform/platformtest"
)

// BenchmarkPipeToFile weighs ways the output of `cat` of 256 MiB
// (PROCESS_BENCH_MIB) could reach a segment file, as the reader's CPU
// (cpu-ns/op: this process's; cat runs apart): reading into a buffer and
// nothing more (the floor), reading then pwrite (what the service does:
// the buffer is the memory followers read), splice(2) from the pipe into
// the file (no buffer), and reading into a shared mapping of the file.
// Each writes into one 8 MiB file over and over, as segments are reused.
func BenchmarkPipeToFile(b *testing.B) {
	size := int64(256 << 20)
	if v, err := strconv.Atoi(os.Getenv("PROCESS_BENCH_MIB")); err == nil && v > 0 {
		size = int64(v) << 20
	}
	const seg = 8 << 20
	src := filepath.Join(b.TempDir(), "src")
	if err := os.WriteFile(src, make([]byte, size), 0o600); err != nil {
		b.Fatal(err)
	}
	ways := []struct {
		name string
		move func(pipe, file int, buf []byte, mm []byte, pos int64) (int, error)
	}{
		{"read-only", func(pipe, _ int, buf, _ []byte, _ int64) (int, error) { return unix.Read(pipe, buf) }},
		{"read+pwrite", func(pipe, file int, buf, _ []byte, pos int64) (int, error) {
			n, err := unix.Read(pipe, buf)
			if n > 0 {
				_, err = unix.Pwrite(file, buf[:n], pos%seg)
			}
			return n, err
		}},
		{"splice", func(pipe, file int, buf, _ []byte, pos int64) (int, error) {
			off := pos % seg
			n, err := unix.Splice(pipe, nil, file, &off, min(len(buf), int(seg-off)), unix.SPLICE_F_MOVE)
			return int(n), err
		}},
		{"read-into-mmap", func(pipe, _ int, buf, mm []byte, pos int64) (int, error) {
			off := int(pos % seg)
			return unix.Read(pipe, mm[off:min(seg, off+len(buf))])
		}},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			file, err := os.OpenFile(filepath.Join(b.TempDir(), "seg"), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer file.Close()
			if err := file.Truncate(seg); err != nil {
				b.Fatal(err)
			}
			mm, err := unix.Mmap(int(file.Fd()), 0, seg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Munmap(mm)
			buf := make([]byte, 1<<20)
			b.SetBytes(size)
			b.ResetTimer()
			cpu := platformtest.CPUTime()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command("cat", src)
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				pipe := int(out.(*os.File).Fd())
				_, _ = unix.FcntlInt(uintptr(pipe), unix.F_SETPIPE_SZ, 1<<20)
				var pos int64
				for {
					n, err := w.move(pipe, int(file.Fd()), buf, mm, pos)
					if err == unix.EINTR || err == unix.EAGAIN {
						continue
					}
					if err != nil || n <= 0 {
						break
					}
					pos += int64(n)
				}
				_ = cmd.Wait()
				if pos != size {
					b.Fatalf("moved %d of %d", pos, size)
				}
			}
			platformtest.ReportCPU(b, cpu)
		})
	}
}
