package platform

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Memory is the memory part of the health record.
type Memory struct {
	Heap uint64 `json:"heap"`
	RSS  uint64 `json:"rss"`
}

// Health is the health record every service answers at GET /health.
type Health struct {
	Built     *string `json:"built"`
	FDs       *int    `json:"fds"`
	IP        string  `json:"ip" required:"true"`
	Memory    *Memory `json:"memory"`
	PID       int     `json:"pid" required:"true"`
	Service   string  `json:"service" required:"true"`
	Started   string  `json:"started" required:"true"`
	Status    string  `json:"status" required:"true" doc:"ok, or unavailable when the service cannot do its work (e.g. no display)"`
	UserAgent *string `json:"user_agent"`
	Detail    string  `json:"detail,omitempty" doc:"why status is not ok"`
}

// Build identifiers, set with -ldflags "-X deckhand/platform.Version=...".
var (
	Version   = "0.1.0"
	BuildTime = ""
)

// processStart is when this process started, for uptime and the health record.
var processStart = time.Now().UTC()

// CountFDs counts this process's open file descriptors (nil off Linux).
func CountFDs() *int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	return new(len(entries) - 1) // the directory handle ReadDir itself opened
}

// ReadMemory reports the Go heap in use and the resident set size.
func ReadMemory() *Memory {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := &Memory{Heap: ms.HeapAlloc}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				m.RSS = pages * uint64(os.Getpagesize())
			}
		}
	}
	return m
}

var pid = os.Getpid()
