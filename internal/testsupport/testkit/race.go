//go:build race

package testkit

// RaceEnabled reports whether the race detector is on, which multiplies the
// CPU time of everything a test measures (by about 5 to 15).
const RaceEnabled = true
