package cli

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
)

// TestReadinessFollowsAStarvedBudget: readiness fails once the
// bytes-in-flight budget refused a call for its deadline (verified work has
// exhausted it), and not for a call that was cancelled or for one that got
// its bytes; the metrics observer still sees every observation.
func TestReadinessFollowsAStarvedBudget(t *testing.T) {
	var seen []string
	w := &budgetWatch{next: recordRefusals(func(r string) { seen = append(seen, r) })}
	lim := inflight.New(100)
	lim.Observe(w)
	upstream := func(context.Context) error { return nil }
	ready := withBudget(w, upstream)

	holder := lim.OpenFor(inflight.WithTenant(context.Background(), "t:a"))
	defer holder.Close()
	if err := holder.Reserve(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	if err := ready(context.Background()); err != nil {
		t.Fatalf("a full budget nobody waits for: %v", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	other := lim.OpenFor(inflight.WithTenant(context.Background(), "t:b"))
	defer other.Close()
	_ = other.Reserve(cancelled, 50)
	if err := ready(context.Background()); err != nil {
		t.Fatalf("after a cancelled wait: %v", err)
	}
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if err := other.Reserve(short, 50); err == nil {
		t.Fatal("a reservation past the budget was granted")
	}
	if err := ready(context.Background()); !errors.Is(err, errBudgetStarved) {
		t.Fatalf("after a deadline refusal: %v, want %v", err, errBudgetStarved)
	}
	if len(seen) == 0 || seen[len(seen)-1] != inflight.RefusedDeadline {
		t.Fatalf("the metrics observer saw %v", seen)
	}
	var none *budgetWatch
	if err := withBudget(none, upstream)(context.Background()); err != nil {
		t.Fatalf("no watch: %v", err)
	}
}

// recordRefusals is an inflight.Observer that reports each refusal.
type recordRefusals func(reason string)

func (r recordRefusals) BudgetWait(time.Duration)    {}
func (r recordRefusals) BudgetRefused(reason string) { r(reason) }
