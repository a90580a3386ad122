//go:build !unix

package testkit

import "time"

// ProcessCPU returns false: the platform cannot tell the CPU time used.
func ProcessCPU() (time.Duration, bool) { return 0, false }
