//go:build !linux

package main

import (
	"os"
	"syscall"
)

// forwarded are the signals the supervisor passes on to its child.
var forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM}

// dieWithParent returns nil: only Linux has a parent-death signal.
func dieWithParent() *syscall.SysProcAttr { return nil }
