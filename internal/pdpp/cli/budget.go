package cli

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
)

// budgetStarvedFor is how long after a call was refused bytes of the budget
// for its whole deadline (inflight.RefusedDeadline) the replica reports
// itself not ready: verified work has exhausted its memory budget, so a
// load balancer should send new work to other replicas meanwhile. Only
// calls of verified tokens hold budget bytes, so no stranger can cause it.
const budgetStarvedFor = 5 * time.Second

// budgetWatch observes the bytes-in-flight budget (inflight.Observer): it
// notes when a reservation was last refused for its deadline, and passes
// every observation on to next (the metrics), when set.
type budgetWatch struct {
	next    inflight.Observer
	starved atomic.Int64 // unix nanoseconds of the last deadline refusal; 0: never
}

func (b *budgetWatch) BudgetWait(d time.Duration) {
	if b.next != nil {
		b.next.BudgetWait(d)
	}
}

func (b *budgetWatch) BudgetRefused(reason string) {
	if reason == inflight.RefusedDeadline {
		b.starved.Store(time.Now().UnixNano())
	}
	if b.next != nil {
		b.next.BudgetRefused(reason)
	}
}

// errBudgetStarved is the readiness failure of a replica whose budget
// refused a call for its deadline within budgetStarvedFor.
var errBudgetStarved = errors.New("the bytes-in-flight budget (--max-inflight-bytes) refused a call for want of room within the last seconds: memory budget exhausted by verified work")

// ready reports errBudgetStarved within budgetStarvedFor of a deadline
// refusal; nil otherwise, and for a nil watch.
func (b *budgetWatch) ready() error {
	if b == nil {
		return nil
	}
	if at := b.starved.Load(); at != 0 && time.Since(time.Unix(0, at)) < budgetStarvedFor {
		return errBudgetStarved
	}
	return nil
}

// withBudget is a ReadyCheck that fails while the budget is starved (see
// budgetWatch.ready), and otherwise asks next.
func withBudget(b *budgetWatch, next func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := b.ready(); err != nil {
			return err
		}
		return next(ctx)
	}
}
