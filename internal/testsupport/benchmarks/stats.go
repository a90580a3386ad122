package benchmarks

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of the durations by
// the nearest-rank method: the smallest value with at least p% of the values
// at or below it. It sorts a copy; an empty input gives 0.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// RatioSE is the standard error of mean(a)/mean(f) over paired samples
// (a[i] and f[i] measured in the same round), by the delta method: the
// standard deviation of a[i] - R*f[i], R the ratio, over sqrt(n)*mean(f).
// A ratio is within about two of these of its true value; fewer than two
// pairs, or unpaired samples, give 0.
func RatioSE(a, f []time.Duration) float64 {
	n := len(a)
	if n < 2 || len(f) != n {
		return 0
	}
	var sa, sf float64
	for i := range n {
		sa += float64(a[i])
		sf += float64(f[i])
	}
	if sf == 0 {
		return 0
	}
	r := sa / sf
	var ss float64
	for i := range n {
		d := float64(a[i]) - r*float64(f[i])
		ss += d * d
	}
	sd := math.Sqrt(ss / float64(n-1))
	return sd / math.Sqrt(float64(n)) / (sf / float64(n))
}
