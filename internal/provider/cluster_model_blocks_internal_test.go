package provider

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// The local, backup and tls blocks convert by field name (expand, flatten): every input reaches a field of
// the plain struct and comes back from it. A block attribute with no field of that name is null after the
// way out, and fails here; so does a field read wrong.

// nullInputs names the attributes of obj (and of its nested objects) that are null, outputs left out.
func nullInputs(obj types.Object, outputs map[string]bool) []string {
	var out []string
	for name, v := range obj.Attributes() {
		switch {
		case outputs[name]:
		case v.IsNull():
			out = append(out, name)
		default:
			if o, ok := v.(types.Object); ok {
				for _, n := range nullInputs(o, nil) {
					out = append(out, name+"."+n)
				}
			}
		}
	}
	return out
}

func TestLocalBlockRoundTrip(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	want := localspec.Block{DataDir: "/srv/pgnvme", PortBase: 25432, RunAsUser: "pgnvme", Limits: &localspec.Limits{
		MemoryMiB: 512, ReadIOPS: 3000, WriteIOPS: 3000, ReadMiBPerSecond: 125, WriteMiBPerSecond: 125, DiskGiB: 16,
		ReadLatencyMS: 1, WriteLatencyMS: 1.5, FlushLatencyMS: 2}}
	obj := localObject(ctx, &want, &diags)
	if n := nullInputs(obj, clusterLocalOutputs); len(n) > 0 || diags.HasError() {
		t.Fatalf("null after localObject: %v (%v): no field of localspec.Block carries them", n, diags)
	}
	got, ok := localInput(ctx, obj, &diags)
	if !ok || diags.HasError() || !reflect.DeepEqual(*got, want) {
		t.Fatalf("round trip: ok %v, %v\n got %+v\nwant %+v (limits %+v)", ok, diags, got, want, want.Limits)
	}

	// An empty limits block is limits without a value (not nil); no block is nil.
	attrs := obj.Attributes()
	attrs["limits"] = types.ObjectValueMust(clusterLimitsAttrTypes, nullAttrs(clusterLimitsAttrTypes))
	if got, ok := localInput(ctx, types.ObjectValueMust(clusterLocalAttrTypes, attrs), &diags); !ok || got.Limits == nil || *got.Limits != (localspec.Limits{}) {
		t.Errorf("limits {}: ok %v, limits %+v; want an empty Limits", ok, got)
	}
	attrs["limits"] = types.ObjectNull(clusterLimitsAttrTypes)
	if got, ok := localInput(ctx, types.ObjectValueMust(clusterLocalAttrTypes, attrs), &diags); !ok || got.Limits != nil {
		t.Errorf("no limits: ok %v, limits %+v; want nil", ok, got)
	}

	// An unknown input, nested too, is not an input yet; an unknown output does not matter.
	for name, v := range map[string]attr.Value{
		"port_base": types.Int64Unknown(),
		"limits":    types.ObjectValueMust(clusterLimitsAttrTypes, map[string]attr.Value{"memory_mib": types.Int64Unknown(), "read_iops": types.Int64Null(), "write_iops": types.Int64Null(), "read_mib_per_second": types.Int64Null(), "write_mib_per_second": types.Int64Null(), "disk_gib": types.Int64Null(), "read_latency_ms": types.Float64Null(), "write_latency_ms": types.Float64Null(), "flush_latency_ms": types.Float64Null()}),
		"data_dirs": types.MapUnknown(types.StringType),
	} {
		a := cloneAttrs(obj.Attributes())
		a[name] = v
		if _, ok := localInput(ctx, types.ObjectValueMust(clusterLocalAttrTypes, a), &diags); ok != clusterLocalOutputs[name] {
			t.Errorf("unknown %s: ok %v; want %v", name, ok, clusterLocalOutputs[name])
		}
	}
}

func TestBackupBlockRoundTrip(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	full, window, keep := 3, 0, 4 // a zero window is a value given, not "unset"
	want := cluster.BackupInput{Schedule: "*-*-* 03:00:00", FullEvery: &full, RecoveryWindowDays: &window, MinFullBackups: &keep}
	obj := backupObject(ctx, &want, &diags)
	if n := nullInputs(obj, nil); len(n) > 0 || diags.HasError() {
		t.Fatalf("null after backupObject: %v (%v)", n, diags)
	}
	got, ok := backupSpecInput(ctx, obj, &diags)
	if !ok || diags.HasError() || !reflect.DeepEqual(*got, want) {
		t.Fatalf("round trip: ok %v, %v\n got %+v\nwant %+v", ok, diags, got, want)
	}
	// Only a schedule: no retention block, nothing else set.
	obj = backupObject(ctx, &cluster.BackupInput{Schedule: "hourly"}, &diags)
	if !obj.Attributes()["retention"].IsNull() || !obj.Attributes()["full_every"].IsNull() {
		t.Errorf("only a schedule: %s", obj)
	}
	if got, ok := backupSpecInput(ctx, obj, &diags); !ok || !reflect.DeepEqual(*got, cluster.BackupInput{Schedule: "hourly"}) {
		t.Errorf("only a schedule: ok %v, %+v", ok, got)
	}
	a := cloneAttrs(obj.Attributes())
	a["full_every"] = types.Int64Unknown()
	if _, ok := backupSpecInput(ctx, types.ObjectValueMust(obj.AttributeTypes(ctx), a), &diags); ok {
		t.Error("unknown full_every: ok")
	}
}

func TestTLSBlockRoundTrip(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	hours, renew, pem, key, arn := 720, 240, "-----BEGIN CERTIFICATE-----", "/ops/ca-key", "arn:aws:acm-pca:eu-west-1:123456789012:certificate-authority/x"
	want := cluster.TLSInput{ValidityPeriodHours: &hours, EarlyRenewalHours: &renew, CACertPEM: &pem, CAKeyParameter: &key, ACMPCAArn: &arn}
	obj := tlsObject(ctx, &want, nil, true, &diags)
	if n := nullInputs(obj, clusterTLSOutputs); len(n) > 0 || diags.HasError() {
		t.Fatalf("null after tlsObject: %v (%v)", n, diags)
	}
	got, ok := tlsSpecInput(ctx, obj, &diags)
	if !ok || diags.HasError() || !reflect.DeepEqual(*got, want) {
		t.Fatalf("round trip: ok %v, %v\n got %+v\nwant %+v", ok, diags, got, want)
	}
	if got, ok := tlsSpecInput(ctx, tlsObject(ctx, &cluster.TLSInput{}, nil, false, &diags), &diags); !ok || !reflect.DeepEqual(*got, cluster.TLSInput{}) {
		t.Errorf("tls {} with its outputs unknown: ok %v, %+v; want no input set", ok, got)
	}
}

func TestRestoreConversions(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	archiveTypes, targetTypes := objectAttrTypes(clusterRestoreAttrTypes["archive"]), objectAttrTypes(clusterRestoreAttrTypes["target"])
	archive := func(opts attr.Value) types.Object {
		return types.ObjectValueMust(archiveTypes, map[string]attr.Value{"pgbackrest_options": opts, "walg_env": types.MapNull(types.StringType), "stanza": types.StringValue("orders")})
	}
	target := types.ObjectValueMust(targetTypes, map[string]attr.Value{"time": types.StringValue("2026-12-02T10:30:00Z"), "lsn": types.StringNull(), "name": types.StringNull(), "immediate": types.BoolValue(false)})
	opts := stringMap(ctx, map[string]string{"repo1-path": "/src"}, &diags)
	got, ok := restoreInputOf(ctx, restoreInput{Backup: types.StringValue("20261202-052928F"), Archive: archive(opts), Target: target}, &diags)
	want := cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Stanza: "orders", Backup: "20261202-052928F",
		Target: cluster.RestoreTargetInput{Time: "2026-12-02T10:30:00Z"}}
	if !ok || diags.HasError() || !reflect.DeepEqual(*got, want) {
		t.Fatalf("restoreInputOf: ok %v, %v\n got %+v\nwant %+v", ok, diags, got, want)
	}
	got, ok = restoreInputOf(ctx, restoreInput{Backup: types.StringNull(), Archive: types.ObjectNull(archiveTypes), Target: types.ObjectNull(targetTypes)}, &diags)
	if !ok || !reflect.DeepEqual(*got, cluster.RestoreInput{}) {
		t.Errorf("nothing given: ok %v, %+v", ok, got)
	}
	unknownOpts := types.MapValueMust(types.StringType, map[string]attr.Value{"repo1-path": types.StringUnknown()})
	if _, ok := restoreInputOf(ctx, restoreInput{Backup: types.StringNull(), Archive: archive(unknownOpts), Target: target}, &diags); ok {
		t.Error("an unknown archive option: ok")
	}
}

func TestRestoredValue(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	at := time.Date(2026, 12, 2, 10, 30, 0, 500_000_000, time.FixedZone("CET", 3600))
	v := restoredValue(ctx, &cluster.RestoreResult{From: "s3://src/orders", Backup: "20261202-052928F", BackupFinishedAt: at, BackupBytes: 1 << 30,
		Target: "the end of the archive", ReachedLSN: "0/3000060", Timeline: 2, WALReplayedBytes: 0, Seconds: 12.5, FinishedAt: at}, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	want := map[string]attr.Value{
		"from": types.StringValue("s3://src/orders"), "backup": types.StringValue("20261202-052928F"), "backup_finished_at": types.StringValue("2026-12-02T09:30:00.5Z"),
		"backup_bytes": types.Int64Value(1 << 30), "target": types.StringValue("the end of the archive"), "reached_lsn": types.StringValue("0/3000060"),
		"reached_time": types.StringNull(), // no transaction replayed: not known
		"timeline":     types.Int64Value(2), "wal_replayed_bytes": types.Int64Value(0), "seconds": types.Float64Value(12.5),
		"finished_at": types.StringValue("2026-12-02T09:30:00.5Z"),
	}
	got := v.Attributes()
	if len(got) != len(want) {
		t.Errorf("restored has %d attributes, the test knows %d", len(got), len(want))
	}
	for name, w := range want {
		if !got[name].Equal(w) {
			t.Errorf("restored.%s = %s; want %s", name, got[name], w)
		}
	}
	if !restoredValue(ctx, nil, &diags).IsNull() {
		t.Error("no restore: restored not null")
	}
}
