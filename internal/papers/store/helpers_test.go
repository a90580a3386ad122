package store

import (
	"sync"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
)

var (
	fixtureOnce sync.Once
	fixtureSnap *snapshot.Snapshot
	fixtureErr  error
	fixtureDir  string
)

// fixture builds the fixture snapshot once per test binary run; tests only
// read it.
func fixture(t testing.TB) *snapshot.Snapshot {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureSnap, fixtureErr = snapshot.BuildFixture(fixtureDir, false)
	})
	if fixtureErr != nil {
		t.Fatalf("build fixture: %v", fixtureErr)
	}
	return fixtureSnap
}

func openFixture(t testing.TB) *Store {
	t.Helper()
	s, err := Open(fixture(t).DBPath)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
