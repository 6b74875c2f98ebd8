package cli

import "golang.org/x/sys/unix"

// echoOff stops the terminal echoing input before a secret's prompt is
// shown, so bytes typed as soon as the prompt appears are never echoed
// (term.ReadPassword alone turns echo off only after the prompt is out).
func echoOff(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
