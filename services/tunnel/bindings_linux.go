package tunnel

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listeningSockets reads the TCP sockets in state LISTEN (0A) from
// /proc/net/tcp and /proc/net/tcp6, the view of this network namespace.
func listeningSockets() ([]listener, error) {
	var out []listener
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		ls, err := readProcNet(f)
		if err != nil {
			if os.IsNotExist(err) && strings.HasSuffix(f, "6") {
				continue // no IPv6 in this kernel
			}
			return nil, err
		}
		out = append(out, ls...)
	}
	return out, nil
}

func readProcNet(path string) ([]listener, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []listener
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		if len(fields) < 10 || fields[3] != "0A" {
			continue
		}
		ip, port, err := parseProcAddr(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		ino, _ := strconv.ParseUint(fields[9], 10, 64)
		out = append(out, listener{port: port, addr: ip, inode: ino})
	}
	return out, sc.Err()
}

// parseProcAddr reads "0100007F:0016": the address as the kernel stores it
// (32-bit words in host byte order, little-endian here) and the port in hex.
func parseProcAddr(s string) (net.IP, int, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("malformed address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("malformed port in %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, fmt.Errorf("malformed address %q", s)
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		ip[w], ip[w+1], ip[w+2], ip[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	if v4 := ip.To4(); v4 != nil && len(raw) == 16 && !ip.Equal(net.IPv6unspecified) {
		return v4, int(port), nil // ::ffff:a.b.c.d
	}
	return ip, int(port), nil
}

// socketOwners finds the processes holding the given socket inodes by
// reading /proc/*/fd links ("socket:[123]"). Processes this one may not
// inspect are skipped: their sockets stay without an owner.
func socketOwners(inodes []uint64) map[uint64]owner {
	want := make(map[string]uint64, len(inodes))
	for _, ino := range inodes {
		want["socket:["+strconv.FormatUint(ino, 10)+"]"] = ino
	}
	out := map[uint64]owner{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			ino, ok := want[link]
			if !ok {
				continue
			}
			if _, dup := out[ino]; dup {
				continue // a forked child shares it; the first (lowest pid, the parent) wins
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
			out[ino] = owner{pid: pid, program: strings.TrimSpace(string(comm))}
			if len(out) == len(want) {
				return out
			}
		}
	}
	return out
}
