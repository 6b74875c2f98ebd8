// Command build makes deckhand's release artefacts without Docker: Debian
// packages of both binaries (nfpm as a library) and the desktop container
// image as an OCI layout (go-containerregistry). It is its own module so the
// packagers' dependencies stay out of the deckhand module.
//
//	build deb   --version V --arch amd64 --bin DIR --out DIR
//	build image --version V --bin DIR --rootfs DIR --out DIR
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: build deb|image [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "deb":
		err = runDeb(os.Args[2:])
	case "image":
		err = runImage(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (deb or image)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func newFlags(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ExitOnError)
}
