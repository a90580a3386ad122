//go:build !unix

package testkit

import "time"

// ProcessCPU returns the CPU time this process has used so far, and false
// where the platform cannot tell (here).
func ProcessCPU() (time.Duration, bool) { return 0, false }
