package localcluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The platform's side of a cluster's TLS: what Plan says of it and what Create and Update do first
// (tls.go holds the decision and the files).

// primaryOf is the name of the running primary among st, "" when there is not exactly one.
func primaryOf(st []Status) string {
	var found []string
	for _, x := range st {
		if x.State == StateRunning && x.Role == string(localnode.RolePrimary) {
			found = append(found, x.Name)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// prepareTLS decides what the apply does with ls's TLS (planTLS, st the members as observed) at the
// Manager's clock's now and writes the certificates it makes or renews.
func (m *Manager) prepareTLS(ls Spec, st []Status) (localspec.TLSDecision, error) {
	now := m.waitClock().Now()
	full, err := m.planTLS(ls, ls.tlsDiffer, st, now)
	if err != nil {
		return full, fmt.Errorf("planning the cluster's TLS: %w", err)
	}
	p := full.Prepared() // the running members' renewals are the engine's steps (renewMember)
	if err := m.writeTLSFiles(ls, p, now); err != nil {
		return p, fmt.Errorf("writing the cluster's certificates: %w", err)
	}
	return p, nil
}

// planTLSInto adds to out what the apply does with ls's TLS (its lines before the steps, for a cluster
// that exists, decided at the Manager's clock's now) and the certificates as they will be; observed are the
// members as Plan read them.
func (m *Manager) planTLSInto(out *cluster.Plan, ls Spec, exists bool, observed []Status) error {
	if ls.TLS == nil && len(ls.tlsDiffer) == 0 {
		return nil
	}
	tp := localspec.TLSDecision{NewCA: true} // a create, resumed or not, may make every certificate
	if exists {
		var err error
		if tp, err = m.planTLS(ls, ls.tlsDiffer, observed, m.waitClock().Now()); err != nil {
			return fmt.Errorf("planning the cluster's TLS: %w", err)
		}
		// Before the steps, as the apply takes them (applyTLS, then Reconcile); the running members'
		// renewals are steps.
		if lines := tp.Prepared().Lines(); len(lines) > 0 {
			out.Actions = strings.TrimSuffix(strings.Join(lines, "\n")+"\n"+out.Actions, "\n")
		}
	}
	out.TLS = plannedTLS(ls, m.engine.Superuser(), tp)
	return nil
}

// applyTLS writes the certificates ls's TLS needs now and turns TLS on or off where the members'
// configuration differs (the detached scripts paused meanwhile: their clients follow the change), then
// reloads the members whose certificate was renewed.
func (p *Platform) applyTLS(ctx context.Context, m *Manager, ls *Spec) (err error) {
	if ls.TLS == nil && len(ls.tlsDiffer) == 0 {
		return nil
	}
	st, err := m.Observe(ctx, *ls)
	if err != nil {
		return err
	}
	tp, err := m.prepareTLS(*ls, st)
	if err != nil || tp.Empty() {
		return err
	}
	tflog.Info(ctx, "cluster "+ls.Name+": TLS", map[string]any{"steps": strings.Join(tp.Lines(), "; ")})
	// The scripts connect as the members' TLS is: stopped before it changes, started after for what it
	// became (ls is updated as each member changes, also when one fails).
	if err := m.stopWatcher(ctx, *ls, false); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.syncWatcher(context.WithoutCancel(ctx), *ls)) }()
	if err := m.applyTLS(ctx, ls, tp, st); err != nil {
		return fmt.Errorf("applying the cluster's TLS: %w", err)
	}
	ls.tlsDiffer = nil
	return nil
}

// certsDue says why each member of ls whose server certificate is due is renewed as the engine's step
// (localspec.TLSDecision.Due), decided at the Manager's clock's now; nil without TLS.
func (m *Manager) certsDue(ls Spec, st []Status) (map[string]string, error) {
	if ls.TLS == nil {
		return nil, nil
	}
	p, err := m.planTLS(ls, ls.tlsDiffer, st, m.waitClock().Now())
	if err != nil {
		return nil, fmt.Errorf("planning the cluster's TLS: %w", err)
	}
	return p.Due(), nil
}

// renewMember executes the engine's renew step for mb: its server certificate issued again (the same key)
// as the decision says now, then, when it runs, a reload and the wait until it serves the new one.
func (m *Manager) renewMember(ctx context.Context, ls Spec, mb Member, st []Status) error {
	now := m.waitClock().Now()
	p, err := m.planTLS(ls, ls.tlsDiffer, st, now)
	if err != nil {
		return fmt.Errorf("planning the cluster's TLS: %w", err)
	}
	i := slices.IndexFunc(p.Renew, func(r localspec.TLSRenewal) bool { return r.Step && r.Key == mb.Name })
	if i < 0 {
		tflog.Info(ctx, "cluster "+ls.Name+": "+mb.Name+"'s certificate is not due any more", nil)
		return nil
	}
	if err := m.writeTLSFiles(ls, localspec.TLSDecision{Renew: p.Renew[i : i+1], On: true}, now); err != nil {
		return fmt.Errorf("renewing %s: %w", p.Renew[i].Name, err)
	}
	if !slices.ContainsFunc(st, func(x Status) bool { return x.Name == mb.Name && x.State == StateRunning }) {
		return nil
	}
	if err := m.engine.Reload(ctx, Node(mb, localnode.RoleStandby)); err != nil {
		return err
	}
	return m.waitServed(ctx, ls, mb, p.Renew[i].CertFile)
}

// servedWait bounds the wait for a member to serve its renewed certificate after its reload.
const servedWait = 30 * time.Second

// waitServed waits until mb's PostgreSQL serves the certificate in certFile, verified against the
// cluster's authority.
func (m *Manager) waitServed(ctx context.Context, ls Spec, mb Member, certFile string) error {
	root, err := DataDirRoot(ls)
	if err != nil {
		return err
	}
	_, ca, err := readCA(TLSDir(root))
	if err != nil {
		return fmt.Errorf("reading the cluster's certificate authority: %w", err)
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	want, err := pki.ParseCert(b)
	if err != nil {
		return fmt.Errorf("%s: %w", certFile, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	last := ""
	err = wait.Until(ctx, mb.Name+" to serve its renewed certificate", servedWait, pollInterval, m.waitClock(), func(ctx context.Context) (bool, error) {
		got, err := pgclient.ServedCertificate(ctx, Host, mb.Port, roots)
		if err != nil {
			last = err.Error()
			return false, wait.NotYet(err)
		}
		last = fmt.Sprintf("it serves serial %s, want %s", got.SerialNumber, want.SerialNumber)
		return got.Equal(want), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	tflog.Info(ctx, "cluster "+ls.Name+": "+mb.Name+" serves its renewed certificate", map[string]any{"not_after": want.NotAfter.UTC().Format(time.RFC3339)})
	return nil
}
