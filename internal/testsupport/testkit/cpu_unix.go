//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system) this process has used
// so far, and false where the platform cannot tell.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// CPUBudget is a CPU-time bound as a test asserts it: d, or ten times d
// under the race detector.
func CPUBudget(d time.Duration) time.Duration {
	if RaceEnabled {
		return 10 * d
	}
	return d
}
