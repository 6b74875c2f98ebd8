package main

import "errors"

func runImage(args []string) error { return errors.New("image: not built yet") }
