// Package testkit holds small helpers that tests in several packages share.
// Nothing outside tests imports it.
package testkit
