// Package cmdkit is the small toolkit both command lines are built on: an
// injectable process environment, sysexits-style exit codes carried by errors,
// flags whose defaults come from environment variables, and a program runner
// that dispatches subcommands, logs to stderr and maps errors to exit codes.
package cmdkit
