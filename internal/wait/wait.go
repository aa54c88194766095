// Package wait is the one polling mechanism of the provider: refresh something until it reaches a target
// state, with named timeouts, growing delays, retryable errors and an injectable clock, in the manner of
// the AWS provider's StateChangeConf. Loops in the adapters (awsclient, pgclient, localnode, localcluster)
// call For, Until or Retry; none sleeps by hand.
//
// The package is pure: it imports only the standard library, and a test drives it with a Clock that never
// sleeps (StepClock).
package wait

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Clock is what For needs of time. Real is the wall clock; StepClock advances instantly.
type Clock interface {
	Now() time.Time
	// After delivers once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Real is the wall clock.
var Real Clock = realClock{}

// Default delays between refreshes when a Spec leaves them zero.
const (
	DefaultMinInterval = 200 * time.Millisecond
	DefaultMaxInterval = 5 * time.Second
)

// Spec says what to wait for.
type Spec[T any] struct {
	// What names the awaited thing for errors, such as `S3 bucket "x" to exist`.
	What string
	// Refresh reads the current state. An error ends the wait, unless Retryable accepts it.
	Refresh func(ctx context.Context) (T, string, error)
	// Pending are the states that mean "not yet"; Target the ones that end the wait. A state in neither
	// ends the wait with an *UnexpectedStateError. An empty Pending accepts any state as pending.
	Pending, Target []string
	// Retryable, when set, marks refresh errors that mean "not yet" (eventual consistency): the wait goes
	// on and the last such error is reported if it times out.
	Retryable func(error) bool
	// Timeout bounds the whole wait (required: a wait without an end is a bug).
	Timeout time.Duration
	// MinInterval is the delay after the first refresh (DefaultMinInterval when 0); each later delay
	// doubles up to MaxInterval (DefaultMaxInterval when 0; equal to MinInterval for a fixed interval).
	MinInterval, MaxInterval time.Duration
	// Clock is Real when nil.
	Clock Clock
}

// TimeoutError is returned when the target was not reached in time.
type TimeoutError struct {
	What      string
	Timeout   time.Duration
	LastState string
	LastError error
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "timed out after %s waiting for %s", e.Timeout, e.What)
	if e.LastState != "" {
		fmt.Fprintf(&b, " (last state: %s)", e.LastState)
	}
	if e.LastError != nil {
		fmt.Fprintf(&b, " (last error: %v)", e.LastError)
	}
	return b.String()
}

func (e *TimeoutError) Unwrap() error { return e.LastError }

// Is makes a timeout match context.DeadlineExceeded, as a wait bounded by a context deadline would, so
// callers test for either one way.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// UnexpectedStateError is returned when Refresh reports a state that is neither pending nor a target.
type UnexpectedStateError struct {
	What   string
	State  string
	Target []string
}

func (e *UnexpectedStateError) Error() string {
	return fmt.Sprintf("waiting for %s: unexpected state %q, wanted %s", e.What, e.State, strings.Join(e.Target, " or "))
}

// ErrNoTimeout is returned for a Spec without a Timeout.
var ErrNoTimeout = errors.New("wait: Spec.Timeout is required")

// For refreshes until the state is a target (returning the last value), an error ends it, ctx ends or the
// timeout passes. The first refresh is immediate.
func For[T any](ctx context.Context, s Spec[T]) (T, error) {
	var zero T
	if s.Timeout <= 0 {
		return zero, ErrNoTimeout
	}
	clock := s.Clock
	if clock == nil {
		clock = Real
	}
	minI, maxI := s.MinInterval, s.MaxInterval
	if minI <= 0 {
		minI = DefaultMinInterval
	}
	if maxI <= 0 {
		maxI = DefaultMaxInterval
	}
	maxI = max(maxI, minI)
	deadline := clock.Now().Add(s.Timeout)
	delay := minI
	var lastState string
	var lastErr error
	for {
		v, state, err := s.Refresh(ctx)
		switch {
		case err != nil && (s.Retryable == nil || !s.Retryable(err)):
			return v, err
		case err != nil:
			lastErr = err
		case slices.Contains(s.Target, state):
			return v, nil
		case len(s.Pending) > 0 && !slices.Contains(s.Pending, state):
			return v, &UnexpectedStateError{What: s.What, State: state, Target: s.Target}
		default:
			lastState, lastErr = state, nil
		}
		left := deadline.Sub(clock.Now())
		if left <= 0 {
			return v, &TimeoutError{What: s.What, Timeout: s.Timeout, LastState: lastState, LastError: lastErr}
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("waiting for %s: %w", s.What, errors.Join(ctx.Err(), lastErr))
		case <-clock.After(min(delay, left)):
		}
		delay = min(delay*2, maxI)
	}
}

// States of Until's condition.
const (
	statePending = "pending"
	stateDone    = "done"
)

// Until polls cond every interval (fixed) until it reports done, returns an error, ctx ends or timeout
// passes. cond's last "not yet" reason, when it gives one as an error wrapped by NotYet, is in the timeout
// error.
func Until(ctx context.Context, what string, timeout, interval time.Duration, clock Clock, cond func(context.Context) (bool, error)) error {
	return UntilBackoff(ctx, what, timeout, interval, interval, clock, cond)
}

// UntilBackoff is Until with an interval that starts at first and doubles after each check up to most.
func UntilBackoff(ctx context.Context, what string, timeout, first, most time.Duration, clock Clock, cond func(context.Context) (bool, error)) error {
	_, err := For(ctx, Spec[bool]{
		What:        what,
		Timeout:     timeout,
		MinInterval: first,
		MaxInterval: most,
		Clock:       clock,
		Pending:     []string{statePending},
		Target:      []string{stateDone},
		Retryable:   IsNotYet,
		Refresh: func(ctx context.Context) (bool, string, error) {
			done, err := cond(ctx)
			if err != nil || !done {
				return done, statePending, err
			}
			return true, stateDone, nil
		},
	})
	return err
}

// Sleep waits d on clock, or until ctx ends (its error then). A d of zero or less returns at once.
func Sleep(ctx context.Context, clock Clock, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if clock == nil {
		clock = Real
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-clock.After(d):
		return nil
	}
}

// notYet marks a condition's error as "keep waiting".
type notYet struct{ err error }

func (n notYet) Error() string { return n.err.Error() }
func (n notYet) Unwrap() error { return n.err }

// NotYet wraps err as a reason to keep waiting (Until and Retry report it if time runs out).
func NotYet(err error) error {
	if err == nil {
		return nil
	}
	return notYet{err}
}

// IsNotYet reports whether err was wrapped by NotYet.
func IsNotYet(err error) bool {
	var n notYet
	return errors.As(err, &n)
}

// Retry calls fn until it succeeds, fails with an error retryable does not accept, ctx ends, or timeout
// passes; then the last error is returned as it came (not wrapped in a TimeoutError), so callers keep
// classifying it. Delays grow from DefaultMinInterval to DefaultMaxInterval.
func Retry[T any](ctx context.Context, what string, timeout time.Duration, clock Clock, retryable func(error) bool, fn func(context.Context) (T, error)) (T, error) {
	var last error
	v, err := For(ctx, Spec[T]{
		What:      what,
		Timeout:   timeout,
		Clock:     clock,
		Pending:   []string{statePending},
		Target:    []string{stateDone},
		Retryable: func(err error) bool { last = err; return retryable(err) },
		Refresh: func(ctx context.Context) (T, string, error) {
			v, err := fn(ctx)
			if err != nil {
				return v, statePending, err
			}
			return v, stateDone, nil
		},
	})
	var te *TimeoutError
	if errors.As(err, &te) && last != nil {
		return v, last
	}
	return v, err
}
