package nodesim

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// startBootUnits starts the units the boot targets want (enabled units), without waiting.
func (m *manager) startBootUnits() {
	for _, t := range bootTargets {
		entries, err := os.ReadDir(m.n.hostPath("/etc/systemd/system/" + t + ".wants"))
		if err != nil {
			continue
		}
		for _, e := range entries {
			m.logf("%s wants %s", t, e.Name())
			m.start(e.Name(), "boot")
		}
	}
}

// start queues a start of name (and of what it requires and wants) and returns the job.
func (m *manager) start(name, why string) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startLocked(name, why)
}

func (m *manager) startLocked(name, why string) *job {
	if m.closed {
		return finishedJob(errors.New("the node is shutting down"))
	}
	u := m.unitLocked(name)
	switch {
	case u.job != nil && !u.job.finished():
		return u.job
	case u.state == StateActive && !strings.HasSuffix(name, ".mount"):
		// A mount unit is active while its file system is mounted, which run checks: systemd follows
		// the mount table, and so a mount point unmounted by hand is mounted again.
		return finishedJob(nil)
	}
	if u.job != nil && u.job.finished() {
		// A unit started again is read again if its file changed since (systemd warns and uses the old
		// one until daemon-reload; the install script reloads before it starts anything).
		m.loadLocked(u)
	}
	if u.file == nil {
		u.result = ResultResources
		return finishedJob(fmt.Errorf("failed to start %s: %s", name, u.detail))
	}
	if u.restart != nil {
		u.restart.Stop()
		u.restart = nil
	}
	j := &job{done: make(chan struct{})}
	u.job = j
	u.state = StateActivating
	u.detail = ""
	m.logf("starting %s (%s)", name, why)
	requires, after := u.file.list("Unit", "Requires"), u.file.list("Unit", "After")
	// RequiresMountsFor= adds Requires= and After= on the mount units (that exist) of the path and its
	// parents.
	for _, p := range u.file.list("Unit", "RequiresMountsFor") {
		for q := path.Clean(p); ; q = path.Dir(q) {
			if mu := bootstrap.SystemdMountUnit(q); m.unitFileExists(mu) {
				requires, after = append(requires, mu), append(after, mu)
			}
			if q == "/" {
				break
			}
		}
	}
	required := map[string]*job{}
	for _, r := range requires {
		required[r] = m.startLocked(r, "required by "+name)
	}
	for _, w := range u.file.list("Unit", "Wants") {
		m.startLocked(w, "wanted by "+name)
	}
	// Ordering: the jobs of units this one is After=, and of units that are Before= this one.
	var before []*job
	for _, a := range after {
		if o, ok := m.units[a]; ok && o.job != nil && !o.job.finished() {
			before = append(before, o.job)
		}
	}
	for _, o := range m.units {
		if o != u && o.file != nil && o.job != nil && !o.job.finished() && slices.Contains(o.file.list("Unit", "Before"), name) {
			before = append(before, o.job)
		}
	}
	go m.run(u, j, required, after, before)
	return j
}

// run carries out a start job of u.
func (m *manager) run(u *unit, j *job, required map[string]*job, after []string, before []*job) {
	fail := func(result, detail string) {
		m.mu.Lock()
		u.state, u.result, u.detail = StateFailed, result, detail
		m.mu.Unlock()
		m.logf("%s failed (%s): %s", u.name, result, detail)
		j.err = fmt.Errorf("job for %s failed (result %s): %s", u.name, result, detail)
		close(j.done)
	}
	for _, b := range before {
		select {
		case <-b.done:
		case <-m.ctx.Done():
			fail(ResultResources, "the node shut down")
			return
		}
	}
	for r, rj := range required {
		// A required unit that is also ordered before this one must have started (systemd fails the job
		// with result "dependency"); one that is not ordered starts alongside.
		if slices.Contains(after, r) {
			if rj.finished() && rj.err != nil {
				fail(ResultDependency, fmt.Sprintf("the required unit %s failed: %v", r, rj.err))
				return
			}
			if st := m.status(r); st.State != StateActive {
				fail(ResultDependency, fmt.Sprintf("the required unit %s is %s", r, st.State))
				return
			}
		}
	}
	if strings.HasSuffix(u.name, ".target") || strings.HasSuffix(u.name, ".timer") {
		// Targets are reached at once; timers are armed (see armTimer).
		m.mu.Lock()
		u.state, u.result = StateActive, ResultSuccess
		u.starts++
		if strings.HasSuffix(u.name, ".timer") {
			m.armTimerLocked(u)
		}
		m.mu.Unlock()
		close(j.done)
		return
	}
	// failed fails the job with the result a runError carries, "resources" for any other error.
	failed := func(err error) {
		var r *runError
		if errors.As(err, &r) {
			fail(r.result, r.detail)
		} else {
			fail(ResultResources, err.Error())
		}
	}
	if strings.HasSuffix(u.name, ".mount") {
		if err := m.mount(u); err != nil {
			failed(err)
			return
		}
		close(j.done)
		return
	}
	for _, p := range u.file.list("Unit", "AssertPathIsMountPoint") {
		if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", p); err != nil {
			fail(ResultAssert, "Assertion failed: AssertPathIsMountPoint="+p+" (not a mount point)")
			return
		}
	}
	if err := m.exec(u); err != nil {
		failed(err)
		return
	}
	close(j.done)
}

// mount starts a mount unit: active at once when Where= is mounted, else What= mounted on Where= (made
// first) with Type= and Options=, as systemd's mount unit does. This machine has no udev, so a
// /dev/disk/by-uuid/UUID that does not exist is looked up by mount(8) as UUID=; a UUID that no device
// has fails the unit with result "dependency", as systemd's device unit times out.
func (m *manager) mount(u *unit) error {
	f := u.file
	what, where := f.get("Mount", "What", ""), f.get("Mount", "Where", "")
	typ, opts := f.get("Mount", "Type", ""), f.get("Mount", "Options", "")
	if what == "" || where == "" || bootstrap.SystemdMountUnit(where) != u.name {
		return &runError{ResultResources, fmt.Sprintf("%s needs What= and Where= with Where= matching its name (Where=%s)", u.name, where)}
	}
	done := func() error {
		m.mu.Lock()
		u.state, u.result = StateActive, ResultSuccess
		u.starts++
		m.mu.Unlock()
		m.logf("%s: %s on %s", u.name, what, where)
		return nil
	}
	if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", where); err == nil {
		return done()
	}
	spec := what
	if uuid, ok := strings.CutPrefix(what, "/dev/disk/by-uuid/"); ok {
		if _, err := os.Stat(m.n.hostPath(what)); err != nil {
			spec = "UUID=" + uuid
			if _, err := m.n.exec(m.ctx, nil, "root", "blkid", "-U", uuid); err != nil {
				return &runError{ResultDependency, fmt.Sprintf("no device has the file system UUID %s (%s): the device unit never appeared", uuid, what)}
			}
		}
	}
	args := []string{"mount"}
	if typ != "" {
		args = append(args, "-t", typ)
	}
	if opts != "" {
		args = append(args, "-o", opts)
	}
	if _, err := m.n.exec(m.ctx, nil, "root", "mkdir", "-p", where); err != nil {
		return &runError{ResultResources, err.Error()}
	}
	if out, err := m.n.exec(m.ctx, nil, "root", append(args, spec, where)...); err != nil {
		return &runError{ResultExitCode, fmt.Sprintf("%s: %s", err, out)}
	}
	if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", where); err != nil {
		return &runError{ResultExitCode, fmt.Sprintf("%s is not mounted on %s after mount(8)", what, where)}
	}
	return done()
}

// runError is a failed start with systemd's result.
type runError struct{ result, detail string }

func (e *runError) Error() string { return e.result + ": " + e.detail }

// armTimerLocked schedules timer u's next elapse of OnCalendar= (UTC; evaluated with backup.ParseCalendar,
// which agrees with systemd-analyze, see its tests): then the timer starts its service (Unit=, else the
// timer's name with .service), as systemd does, and is armed again. A stop of the timer, or of the node,
// disarms it (u.restart, as a service's pending restart). A timer without OnCalendar=, or with one the
// parser refuses, stays active without firing, as logged. Called with m.mu held.
func (m *manager) armTimerLocked(u *unit) {
	expr := u.file.get("Timer", "OnCalendar", "")
	if expr == "" {
		m.logf("%s: no OnCalendar=; it never fires here", u.name)
		return
	}
	c, err := backup.ParseCalendar(expr)
	if err != nil {
		m.logf("%s: OnCalendar=%s: %v; it never fires here", u.name, expr, err)
		return
	}
	next, ok := c.Next(time.Now())
	if !ok {
		m.logf("%s: OnCalendar=%s never elapses", u.name, expr)
		return
	}
	service := u.file.get("Timer", "Unit", strings.TrimSuffix(u.name, ".timer")+".service")
	if u.restart != nil {
		u.restart.Stop()
	}
	u.restart = time.AfterFunc(time.Until(next), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed || u.state != StateActive {
			return
		}
		m.logf("%s elapsed: starting %s", u.name, service)
		m.startLocked(service, u.name)
		m.armTimerLocked(u)
	})
}
