package evidence

// noun is one when n is 1 and many otherwise, so rendered counts read
// "1 hit", "2 hits", "0 hits", never "1 hits".
func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
