package localcluster

import (
	"context"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// SynchronousNow reads synchronous_standby_names on the running primary among st (fallback when none
// runs or it cannot be read) and reports whether fewer named standbys stream than s.Synchronous.Number.
func (m *Manager) SynchronousNow(ctx context.Context, s Spec, st []Status, fallback string) (string, bool) {
	value := fallback
	streaming := 0
	for _, n := range st {
		if n.Role == string(localnode.RolePrimary) && n.State == StateRunning {
			db, err := pgclient.Connect(ctx, pgclient.Config{Host: Host, Port: n.Port, Database: "postgres", User: m.engine.Superuser(), SSLMode: "disable"})
			if err == nil {
				if v, err := db.Setting(ctx, "synchronous_standby_names"); err == nil {
					value = v
				}
				_ = db.Close(ctx)
			}
		}
		if n.Role == string(localnode.RoleStandby) && n.Streaming {
			streaming++
		}
	}
	return value, streaming < s.Synchronous.Number
}

// Planned is what the members will look like after the actions run: every member of s running, roles
// carried over from known (by name) except where the actions change them. promoting is true when a
// Promote is among the actions: which standby wins is decided again at apply from the live WAL positions,
// so the roles are not known in advance.
func Planned(s Spec, known map[string]string, actions []topology.Action, creating bool) (planned []Status, promoting bool) {
	roles := map[string]string{}
	for name, role := range known {
		roles[name] = role
	}
	for _, a := range actions {
		switch a.Kind {
		case topology.Promote:
			promoting = true
		case topology.Reseed, topology.Create:
			roles[a.Node] = string(localnode.RoleStandby)
		}
	}
	for i, mem := range s.Members {
		role := roles[mem.Name]
		if role == "" {
			role = string(localnode.RoleStandby)
			if creating && i == 0 {
				role = string(localnode.RolePrimary)
			}
		}
		planned = append(planned, Status{Member: mem, State: StateRunning, Role: role})
	}
	return planned, promoting
}
