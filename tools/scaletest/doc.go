// Command scaletest proves that replicas of pdpp-mcp-server are
// interchangeable and drain cleanly: it builds the server, starts the
// embedded demo RS, three `http` replicas and HAProxy (from the system
// packages) in front of them with a /readyz health check, all on loopback,
// then runs 50 clients for 60 s through HAProxy while one replica is sent
// SIGTERM mid-run and restarted. It reports throughput, latency
// percentiles, the replicas' CPU time per call and peak RSS, and exits 1
// when any call failed. Run it with `make scale-test`.
package main
