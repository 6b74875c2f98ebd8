package procnet

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

var tables = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// scan reads both tables row by row until fn reports it is done. A kernel
// without IPv6 has no tcp6 table.
func scan(fn func(Socket) (done bool)) error {
	for i, path := range tables {
		done, err := scanFile(path, fn)
		if err != nil {
			if os.IsNotExist(err) && i == 1 {
				return nil
			}
			return err
		}
		if done {
			return nil
		}
	}
	return nil
}

func scanFile(path string, fn func(Socket) bool) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 10 {
			continue
		}
		s, err := parseRow(fields)
		if err != nil {
			return false, fmt.Errorf("%s: %v", path, err)
		}
		if fn(s) {
			return true, nil
		}
	}
	return false, sc.Err()
}

func parseRow(f [][]byte) (Socket, error) {
	var s Socket
	var err error
	if s.Local, err = ParseAddr(string(f[1])); err != nil {
		return s, err
	}
	if s.Remote, err = ParseAddr(string(f[2])); err != nil {
		return s, err
	}
	st, err := strconv.ParseUint(string(f[3]), 16, 8)
	if err != nil {
		return s, fmt.Errorf("malformed state %q", f[3])
	}
	uid, err := strconv.ParseUint(string(f[7]), 10, 32)
	if err != nil {
		return s, fmt.Errorf("malformed uid %q", f[7])
	}
	s.State, s.UID = uint8(st), uint32(uid)
	s.Inode, _ = strconv.ParseUint(string(f[9]), 10, 64)
	return s, nil
}
