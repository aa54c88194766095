package provider

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// Every input of the aws block reaches a field of awsspec.Input and comes back from it: a block attribute
// with no field of the same name, or a field read wrong, fails here (no key list to keep).
func TestAWSBlockRoundTrip(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	want := awsspec.Block{
		Region: "eu-west-1", InstanceType: "m6id.large", AMIID: "ami-0123456789abcdef0", AMIParameter: "/my/ami",
		SubnetIDs: map[string]string{"eu-west-1a": "subnet-1"}, SecurityGroupIDs: []string{"sg-1"}, AllowedCIDRs: []string{"10.0.0.0/16"},
		IAMInstanceProfile: "db", NodePolicyJSON: `{"Statement":[]}`, KeyName: "ops", PlacementGroup: "racks", RootVolumeGiB: 24,
		MetadataHopLimit: 3, Patroni: awsspec.Patroni{TTL: 40, LoopWait: 5, MaximumLagOnFailover: 1 << 20}, APIAddress: awsspec.APIAddressPublic,
		Tags: map[string]string{"team": "db"}, DeletionProtection: true, LoadBalancer: true,
	}
	obj := awsObject(ctx, &want, &diags)
	// Each input was written (outputs stay null until a refresh).
	for name, v := range obj.Attributes() {
		if !clusterAWSOutputs[name] && v.IsNull() {
			t.Errorf("aws.%s is null: no field of awsspec.Block carries it", name)
		}
	}
	in, ok := awsInput(ctx, obj, &diags)
	if diags.HasError() || !ok {
		t.Fatalf("awsInput: %v, ok %v", diags, ok)
	}
	if in.DeletionProtection == nil || !*in.DeletionProtection {
		t.Fatalf("deletion protection as given: %v; want true", in.DeletionProtection)
	}
	got := in.Block // the input's deletion protection is the pointer above (unset defaults to true)
	got.DeletionProtection = *in.DeletionProtection
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// Unset inputs: zero values, deletion protection unset (nil), the patroni object null.
	attrs := nullAttrs(clusterAWSAttrTypes)
	attrs["instance_type"], attrs["subnet_ids"] = types.StringValue("m6id.large"), stringMap(ctx, map[string]string{"eu-west-1a": "subnet-1"}, &diags)
	in, ok = awsInput(ctx, types.ObjectValueMust(clusterAWSAttrTypes, attrs), &diags)
	if diags.HasError() || !ok || in.DeletionProtection != nil || in.Patroni != (awsspec.Patroni{}) || in.MetadataHopLimit != 0 || in.KeyName != "" {
		t.Errorf("unset inputs: %+v, %v, ok %v", in, diags, ok)
	}
	// An unknown input, nested too, is not an input yet; an unknown ami_id is "" (the platform resolves it).
	for name, v := range map[string]attr.Value{
		"key_name": types.StringUnknown(),
		"patroni": types.ObjectValueMust(clusterAWSPatroniAttrTypes, map[string]attr.Value{
			"ttl": types.Int64Unknown(), "loop_wait": types.Int64Null(), "retry_timeout": types.Int64Null(), "maximum_lag_on_failover": types.Int64Null()}),
		"ami_id": types.StringUnknown(),
	} {
		a := cloneAttrs(attrs)
		a[name] = v
		in, ok := awsInput(ctx, types.ObjectValueMust(clusterAWSAttrTypes, a), &diags)
		if wantOK := name == "ami_id"; ok != wantOK || (ok && in.AMIID != "") {
			t.Errorf("unknown %s: ok %v; want %v", name, ok, wantOK)
		}
	}
}

func cloneAttrs(m map[string]attr.Value) map[string]attr.Value {
	out := make(map[string]attr.Value, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// archive_status's model and the schema's types agree (ObjectValueFrom checks every field both ways), and
// each reading lands in its attribute.
func TestArchiveStatusValue(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	h := &archive.Health{LastArchived: "000000020000000000000007", LastArchivedAt: at, Segments: 6, Known: true, Unarchived: 1, ArchivingOK: true,
		Failures:     archive.Failures{Count: 2, LastWAL: "000000020000000000000005", LastAt: at},
		Backups:      []archive.Backup{{Label: "20261207-100000F", Type: "full", Stop: at.Unix(), Size: 1 << 30}},
		Verification: &archive.Verification{Timeline: 2, VerifiedAt: at, OK: true, Detail: "verified"}}
	v := archiveStatusValue(ctx, h, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	a := v.Attributes()
	for name, want := range map[string]attr.Value{
		"last_archived_wal": types.StringValue("000000020000000000000007"), "archived_segments": types.Int64Value(6), "unarchived_segments": types.Int64Value(1),
		"archiving_ok": types.BoolValue(true), "failed_count": types.Int64Value(2), "last_backup_label": types.StringValue("20261207-100000F"),
		"last_backup_at": types.StringValue("2026-12-07T10:00:00Z"), "last_backup_size_bytes": types.Int64Value(1 << 30), "verified_timeline": types.Int64Value(2),
		"verification_ok": types.BoolValue(true), "first_missing_wal": types.StringNull(), "recoverable_from": types.StringNull(),
	} {
		if !a[name].Equal(want) {
			t.Errorf("archive_status.%s = %s; want %s", name, a[name], want)
		}
	}
	if len(a) != len(clusterArchiveStatusAttrTypes) || len(a) != 20 {
		t.Errorf("archive_status has %d attributes; the schema %d (20)", len(a), len(clusterArchiveStatusAttrTypes))
	}
	if !archiveStatusValue(ctx, nil, &diags).IsNull() {
		t.Error("no archive: archive_status not null")
	}
}

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
