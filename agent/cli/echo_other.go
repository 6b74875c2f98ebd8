//go:build !linux

package cli

import "errors"

func echoOff(int) (func(), error) { return nil, errors.New("not supported") }
