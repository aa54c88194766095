package pgclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Synchronous is the synchronous replication ApplySynchronous puts in force.
type Synchronous struct {
	// StandbyNames is the synchronous_standby_names value, such as
	// "ANY 1 (s1, s2)".
	StandbyNames string
	// Commit is the synchronous_commit value ("on", "remote_apply", ...).
	Commit string
	// SettingTimeout bounds the wait for the reload to reach this session
	// (WaitSetting; 30 s when 0).
	SettingTimeout time.Duration
	// InSync, when set, judges the connected standbys once the setting is in
	// force: true when they show the expected sync_state, otherwise why not.
	// ApplySynchronous waits for it for at most StandbysTimeout (60 s when 0).
	InSync          func([]Standby) (bool, string)
	StandbysTimeout time.Duration
	// Interval is the delay between reads of the standbys (250 ms when 0);
	// Clock paces them (wait.Real when nil).
	Interval time.Duration
	Clock    wait.Clock
}

// SyncStep names a step of ApplySynchronous, for errors.
type SyncStep string

// The steps of ApplySynchronous, in order.
const (
	SyncCheckPrimary SyncStep = "checking that the server is a primary"
	SyncAlterSystem  SyncStep = "writing the settings with ALTER SYSTEM"
	SyncReload       SyncStep = "reloading the configuration"
	SyncSetting      SyncStep = "waiting for synchronous_standby_names to take effect"
	SyncReadStandbys SyncStep = "reading pg_stat_replication"
	SyncStandbys     SyncStep = "waiting for the standbys' sync_state"
)

// SyncError is ApplySynchronous's error: the step that failed and the cause.
// From SyncReadStandbys on, the settings are in force.
type SyncError struct {
	Step SyncStep
	Err  error
}

func (e *SyncError) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }
func (e *SyncError) Unwrap() error { return e.Err }

// SyncApplied reports whether ApplySynchronous's result err leaves the
// settings in force: nil, or a failure while waiting for the standbys.
func SyncApplied(err error) bool {
	var se *SyncError
	return err == nil || errors.As(err, &se) && (se.Step == SyncReadStandbys || se.Step == SyncStandbys)
}

// ApplySynchronous configures synchronous replication on the primary this
// session is connected to: it refuses a standby (ErrNotPrimary), writes
// synchronous_standby_names and synchronous_commit with ALTER SYSTEM,
// reloads, waits until this session sees the new synchronous_standby_names
// and then, with s.InSync set, until the standbys satisfy it. Every failure
// is a *SyncError.
func (c *Conn) ApplySynchronous(ctx context.Context, s Synchronous) error {
	fail := func(step SyncStep, err error) error { return &SyncError{Step: step, Err: err} }
	if err := c.RequirePrimary(ctx); err != nil {
		return fail(SyncCheckPrimary, err)
	}
	for _, set := range [][2]string{{"synchronous_standby_names", s.StandbyNames}, {"synchronous_commit", s.Commit}} {
		if err := c.AlterSystemSet(ctx, set[0], set[1]); err != nil {
			return fail(SyncAlterSystem, err)
		}
	}
	if err := c.ReloadConf(ctx); err != nil {
		return fail(SyncReload, err)
	}
	settingTimeout := s.SettingTimeout
	if settingTimeout <= 0 {
		settingTimeout = 30 * time.Second
	}
	if err := c.WaitSetting(ctx, "synchronous_standby_names", s.StandbyNames, settingTimeout); err != nil {
		return fail(SyncSetting, err)
	}
	if s.InSync == nil {
		return nil
	}
	standbysTimeout := s.StandbysTimeout
	if standbysTimeout <= 0 {
		standbysTimeout = time.Minute
	}
	interval := s.Interval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	what := fmt.Sprintf("the standbys of %s to satisfy %q", c.target, s.StandbyNames)
	var readErr error
	err := wait.Until(ctx, what, standbysTimeout, interval, s.Clock, func(ctx context.Context) (bool, error) {
		standbys, err := c.Standbys(ctx)
		if err != nil {
			readErr = err
			return false, err
		}
		if ok, why := s.InSync(standbys); !ok {
			return false, wait.NotYet(errors.New(why))
		}
		return true, nil
	})
	switch {
	case err != nil && readErr != nil:
		return fail(SyncReadStandbys, err)
	case err != nil:
		return fail(SyncStandbys, err)
	}
	return nil
}
