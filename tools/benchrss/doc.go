// Command benchrss measures the pdpp-mcp-server process as a client sees it:
// it builds the binary, serves a demo RS on loopback from its own process,
// and drives the binary as a subprocess over stdio and over HTTP, reporting
// cold start, the child's resident memory (VmRSS from /proc) as calls
// accumulate, latency percentiles and throughput, and the same RS requests
// made directly in the same run, as one markdown table on stdout. Over stdio
// a second child of the same binary is driven by a bare JSON-RPC client that
// decodes only id, error and isError (the raw path, -stdio-raw), reported
// next to the mcp-go client's figure. Each stdio call is also made through
// the floor (-floor): benchrss itself, run again as a pass-through MCP server
// that returns the RS body verbatim, driven by the same clients, so the
// report shows what the client and the stdio hop cost whatever the server
// does (floor/direct) and what the adapter adds to that (adapter/floor).
//
//	go run ./tools/benchrss                  default run (about a minute)
//	go run ./tools/benchrss -calls 10000     longer stdio growth check
//	go run ./tools/benchrss -flood           batch flood: 10 concurrent 5,000-item
//	                                         batches; fails when the server's peak
//	                                         RSS reaches 100 MB or the RS sees more
//	                                         than the batch cap of calls per batch
//	go run ./tools/benchrss -fullcap         detail "full" and memory: a scripted RS
//	                                         of 100 x 78,000-character records (< and
//	                                         HTML); peak RSS under 8 full + 4 compact
//	                                         calls, RSS a minute later, the rise of
//	                                         one page-sized full fetch; fails when a
//	                                         bound is missed
//	go run ./tools/benchrss -hostile         decoded size: a scripted RS whose record
//	                                         holds a 7.8 MB array of 2.6 million empty
//	                                         objects; peak RSS (<= 160 MB) and CPU
//	                                         (<= 3 s) of 6 concurrent query_records,
//	                                         then fetch, calls; fails when one is missed
//	go run ./tools/benchrss -hiddenfull      escaped full detail: a scripted RS whose
//	                                         record is 3.9 MB of tag characters; peak
//	                                         RSS (<= 160 MB, no GOMEMLIMIT) of 24
//	                                         concurrent full fetches of it
//	go run ./tools/benchrss -fair            fair shares: 4 concurrent 16-item batches
//	                                         of full calls, then full calls looping
//	                                         on 24 connections, each beside another
//	                                         token's small searches; fails on a busy
//	                                         or timed-out item, a search over 2 s
//	                                         beside the batches, or a p95 over
//	                                         0.75 s beside the loop
//	go run ./tools/benchrss -conns           held connections (part of -strangers):
//	                                         idle connections' memory; 17 /24s x 512
//	                                         and one address x 512 kept-alive
//	                                         connections held by a child process
//	                                         while a verified token's searches on new
//	                                         connections are timed; fails when fewer
//	                                         than 90% are answered or the admin
//	                                         listener misses a probe
//
// Linux only (it reads /proc/<pid>/status). Every address is loopback.
package main
