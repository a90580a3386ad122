//go:build !unix

package testkit

import "time"

// ProcessCPU returns the CPU time this process has used so far, and false
// where the platform cannot tell (here).
func ProcessCPU() (time.Duration, bool) { return 0, false }

// CPUBudget is a CPU-time bound as a test asserts it: d, or ten times d
// under the race detector.
func CPUBudget(d time.Duration) time.Duration {
	if RaceEnabled {
		return 10 * d
	}
	return d
}
