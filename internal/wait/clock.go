package wait

import (
	"sync"
	"time"
)

// StepClock is a Clock for tests that never sleeps: After advances Now by d and fires at once. Sleeps
// records every delay asked for.
type StepClock struct {
	mu     sync.Mutex
	now    time.Time
	Sleeps []time.Duration
}

// NewStepClock starts at t.
func NewStepClock(t time.Time) *StepClock { return &StepClock{now: t} }

// Now is the clock's current time.
func (c *StepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t (either way), so that a test decides at a chosen instant.
func (c *StepClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// After advances the clock by d and returns a channel that has already fired.
func (c *StepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.Sleeps = append(c.Sleeps, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}
