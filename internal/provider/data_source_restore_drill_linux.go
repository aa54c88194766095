package provider

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

// The drill's scratch node is run by the local platform (internal/localcluster), which needs Linux;
// data_source_restore_drill_other.go is the drill's answer elsewhere.

// restoreDrills is what a drill runs with, handed to the data source by Configure (Clients.Drills): the
// local platform's Manager for a user, and a free port on 127.0.0.1 for the scratch node.
type restoreDrills struct {
	manager func(runAsUser string) (drillManager, error)
	port    func() (int, error)
}

// drillManager is the part of localcluster.Manager a drill uses.
type drillManager interface {
	RunDrill(ctx context.Context, root []string, d localcluster.Drill) (localcluster.DrillResult, error)
}

// newRestoreDrills runs drills with the local platform on this machine.
func newRestoreDrills() *restoreDrills {
	return &restoreDrills{
		manager: func(runAsUser string) (drillManager, error) { return localcluster.NewManager(runAsUser) },
		port:    freeLoopbackPort,
	}
}

func (d *restoreDrillDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m restoreDrillModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r, ok := m.restore(ctx, &resp.Diagnostics)
	if !ok {
		return
	}
	if d.drills == nil {
		resp.Diagnostics.AddError("Provider Not Configured", "pgnvme_restore_drill was read before the provider was configured. This is a bug in the provider; please report it.")
		return
	}
	mgr, err := d.drills.manager(m.RunAsUser.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Restore Drill Not Possible Here", "The drill runs PostgreSQL on the machine that runs Terraform, and it cannot: "+err.Error())
		return
	}
	port, err := d.drills.port()
	if err != nil {
		resp.Diagnostics.AddError("Restore Drill Not Possible Here", "No free TCP port on 127.0.0.1 for the scratch node: "+err.Error())
		return
	}
	res, err := mgr.RunDrill(ctx, nil, localcluster.Drill{Restore: r, CheckSQL: m.CheckSQL.ValueString(), WorkDir: m.WorkDir.ValueString(), Port: port})
	if err != nil {
		addClusterError(&resp.Diagnostics, "Restore Drill Failed", "The archive could not be restored into the scratch node (which was removed). "+
			"This is what a restore of a cluster from this archive would meet: fix it, and run the drill again.", err)
		return
	}
	at := func(t time.Time) types.String {
		if t.IsZero() {
			return types.StringNull()
		}
		return types.StringValue(t.UTC().Format(time.RFC3339Nano))
	}
	rs := res.Restored
	m.RestoreSeconds, m.RestoredBackup, m.BackupFinishedAt = types.Float64Value(rs.Seconds), types.StringValue(rs.Backup), at(rs.BackupFinishedAt)
	m.RestoredBytes, m.ReachedLSN, m.ReachedTime = types.Int64Value(rs.BackupBytes), types.StringValue(rs.ReachedLSN), at(rs.ReachedTime)
	m.WALReplayedBytes, m.ArchiveLastWAL = types.Int64Value(rs.WALReplayedBytes), types.StringValue(res.Health.LastArchived)
	m.RecoverableFrom, m.RecoverableTo = at(res.Health.RecoverableFrom), at(res.Health.RecoverableTo)
	m.VerificationOK, m.VerificationDetail = types.BoolValue(res.Verified), types.StringValue(res.Detail)
	m.CheckOK = types.BoolNull()
	if res.CheckOK != nil {
		m.CheckOK = types.BoolValue(*res.CheckOK)
	}
	if !res.Verified {
		resp.Diagnostics.AddAttributeWarning(path.Root("verification_ok"), "Archive Verification Failed", res.Detail)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// freeLoopbackPort is a TCP port on 127.0.0.1 that nothing listens on now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("unexpected address %v", l.Addr())
	}
	return addr.Port, nil
}
