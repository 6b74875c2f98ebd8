// Command build makes deckhand's Debian packages of both binaries (nfpm as
// a library). It is its own module so the packager's dependencies stay out
// of the deckhand module. The container images are scripts/image.sh's.
//
//	build deb --version V --arch amd64 --bin DIR --out DIR
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: build deb [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "deb":
		err = runDeb(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (deb)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func newFlags(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ExitOnError)
}
