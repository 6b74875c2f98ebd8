//go:build !linux

package procnet

func scan(func(Socket) bool) error { return ErrUnsupported }
