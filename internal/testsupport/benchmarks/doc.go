// Package benchmarks measures what the adapter costs on top of the resource
// server: each tool call, made through MCP, is timed against the same RS
// request made directly, on the demo RS over loopback, and reported as a
// ratio measured in the same run. The benchmarks live in the _test files;
// the package exports only what tools/benchrss shares with them: the
// workload, the direct RS client, the floor (a pass-through MCP server that
// returns the RS body verbatim, the least any adapter can cost through a
// given client), a percentile helper, and LargeRS, a scripted RS of large
// values for the memory checks.
package benchmarks
