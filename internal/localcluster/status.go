package localcluster

import (
	"context"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// SynchronousNow reads synchronous_standby_names on the running primary among st and reports whether
// fewer named standbys stream than s.Synchronous.Number. known is false (with the reason as err when there
// was one) when no single primary runs or it could not be read: the value is then not current and the
// caller must say so rather than report an older one.
func (m *Manager) SynchronousNow(ctx context.Context, s Spec, st []Status) (value string, degraded, known bool, err error) {
	streaming := 0
	var primaries []Status
	for _, n := range st {
		if n.Role == string(localnode.RolePrimary) && n.State == StateRunning {
			primaries = append(primaries, n)
		}
		if n.Role == string(localnode.RoleStandby) && n.Streaming {
			streaming++
		}
	}
	degraded = streaming < s.Synchronous.Number
	if len(primaries) != 1 {
		return "", degraded, false, nil
	}
	db, err := m.connect(ctx, primaries[0].Member)
	if err != nil {
		return "", degraded, false, err
	}
	defer func() { _ = db.Close(context.WithoutCancel(ctx)) }()
	value, err = db.Setting(ctx, "synchronous_standby_names")
	if err != nil {
		return "", degraded, false, err
	}
	return value, degraded, true, nil
}
