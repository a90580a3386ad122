//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns this process's CPU time so far (user and system), or false.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
