package localtcp_test

import (
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"deckhand/platform/localtcp"
)

// threadCPU is the calling thread's CPU time (user and system).
func threadCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLoopbackSend sends 64 MiB per op in 1 MiB writes over loopback
// TCP to a reader in another goroutine, under the host's default
// congestion control and tuned (Tune: reno). sender-cpu-ms/GiB is the
// sending thread's CPU, which on loopback includes the kernel's delivery
// to the receiving socket.
func BenchmarkLoopbackSend(b *testing.B) {
	for _, tc := range []struct {
		name string
		tune bool
	}{{"host-default", false}, {"tuned", true}} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 1<<20)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if tc.tune && !localtcp.Tune(c) {
				b.Fatal("Tune changed nothing")
			}
			buf := make([]byte, 1<<20)
			const perOp = 64
			b.SetBytes(perOp << 20)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			start := threadCPU()
			for i := 0; i < b.N; i++ {
				for k := 0; k < perOp; k++ {
					if _, err := c.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(threadCPU()-start)/float64(time.Millisecond)/float64(b.N)*(1024/perOp), "sender-cpu-ms/GiB")
			_ = c.Close()
			<-done
		})
	}
}
