package main

import (
	"context"
	"errors"
	"sync"
	"time"
)

// burst is what measureBurst saw of one child: its idle and peak memory,
// the CPU time and wall time of the calls, their outcomes by code and the
// largest reply.
type burst struct {
	idle, peak memory
	cpu        time.Duration
	elapsed    time.Duration
	outcomes   map[string]int
	replyBytes int64
}

// measureBurst warms the child with one schema call (token check, first
// allocations, without reading the measured record), reads its idle memory
// a second later, then makes calls concurrent calls of tool with args
// (bounded by the caller's flag) and reads the CPU time they took and the
// peak memory.
func (b *burst) measureBurst(ctx context.Context, c *child, tool string, args map[string]any, calls int) error {
	pid := c.cmd.Process.Pid
	if _, _, err := toolCall(ctx, c.addr, "schema", map[string]any{}); err != nil {
		return err
	}
	time.Sleep(time.Second)
	var err error
	if b.idle, err = readMemory(pid); err != nil {
		return err
	}
	cpuBefore, err := readCPU(pid)
	if err != nil {
		return err
	}
	if b.outcomes == nil {
		b.outcomes = map[string]int{}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	start := time.Now()
	for range calls {
		wg.Go(func() {
			n, code, err := toolCall(ctx, c.addr, tool, args)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			b.outcomes[code]++
			b.replyBytes = max(b.replyBytes, n)
		})
	}
	wg.Wait()
	b.elapsed = time.Since(start)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	cpuAfter, err := readCPU(pid)
	if err != nil {
		return err
	}
	b.cpu = cpuAfter - cpuBefore
	b.peak, err = readMemory(pid)
	return err
}
