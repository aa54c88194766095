package cluster_test

import (
	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"

	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

func intp(n int) *int { return &n }

// localBlock is a local block as the configuration gives it.
func localBlock(b localspec.Block) []cluster.BlockInput { return []cluster.BlockInput{&b} }
func boolp(b bool) *bool                                { return &b }

func TestFromInputDefaults(t *testing.T) {
	defaultPolicy := backup.Default()
	in := cluster.Input{Name: "demo", Blocks: localBlock(localspec.Block{DataDir: "/d"}), Archive: &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}}}
	s := cluster.FromInput(in)
	want := cluster.Spec{
		Given:       &in,
		Name:        "demo",
		Nodes:       []cluster.Node{{Name: "node-1", Zone: "local"}, {Name: "node-2", Zone: "local"}, {Name: "node-3", Zone: "local"}},
		Synchronous: bootstrap.Synchronous{Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: "on"},
		Archive:     &bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-path": "/r"}, BackupOnCreate: true, Backup: &defaultPolicy},
		Block:       &localspec.Block{DataDir: "/d", PortBase: localspec.DefaultPortBase},
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("FromInput =\n%+v\nwant\n%+v", s, want)
	}
	one := cluster.FromInput(cluster.Input{Name: "x", NodeCount: intp(1), Archive: &cluster.ArchiveInput{BackupOnCreate: boolp(false)}})
	if one.Synchronous.Number != 0 || len(one.Nodes) != 1 || one.Archive.BackupOnCreate {
		t.Errorf("a single node defaults to asynchronous and backup_on_create=false is kept: %+v", one)
	}
	if p := one.Platform(); p != "" {
		t.Errorf("no platform block: Platform() = %q", p)
	}
}

// TestValidate: every rule once, each problem at its attribute.
func TestValidate(t *testing.T) {
	valid := func() cluster.Input {
		return cluster.Input{Name: "demo", Blocks: localBlock(localspec.Block{DataDir: "/var/lib/pgnvme/demo"})}
	}
	tests := []struct {
		name   string
		change func(*cluster.Input)
		path   string // "" = valid
		detail string
	}{
		{"valid", func(*cluster.Input) {}, "", ""},
		{"no platform", func(in *cluster.Input) { in.Blocks = nil }, "<root>", "exactly one platform block"},
		{"cluster name", func(in *cluster.Input) { in.Name = "Demo_1" }, "name", "lower-case letter"},
		{"node name", func(in *cluster.Input) { in.Nodes = []cluster.Node{{Name: "n1"}, {Name: "N2"}} }, "node", "lower-case letter"},
		{"duplicate node names", func(in *cluster.Input) { in.Nodes = []cluster.Node{{Name: "n1"}, {Name: "n1"}} }, "node", "listed twice"},
		{"too many nodes", func(in *cluster.Input) { in.NodeCount = intp(10) }, "node", "give it 1 to 9"},
		{"number for required", func(in *cluster.Input) { in.NodeCount = intp(2); in.Synchronous.Number = intp(2) }, "synchronous.number", "more than the cluster's 1 standbys"},
		{"preferred may ask for more", func(in *cluster.Input) {
			in.Synchronous.Number, in.Synchronous.DataDurability = intp(5), "preferred"
		}, "", ""},
		{"method", func(in *cluster.Input) { in.Synchronous.Method = "all" }, "synchronous.method", "not supported"},
		{"commit", func(in *cluster.Input) { in.Synchronous.Commit = "maybe" }, "synchronous.commit", "not supported"},
		{"reserved parameter", func(in *cluster.Input) { in.Parameters = map[string]string{"port": "1"} }, "parameters", `"port" is set by the platform`},
		{"ssl as a parameter", func(in *cluster.Input) { in.Parameters = map[string]string{"ssl": "on"} }, "parameters", `"ssl" is set by the tls block`},
		{"tls with defaults", func(in *cluster.Input) { in.TLS = &cluster.TLSInput{} }, "", ""},
		{"tls with an authority of one's own on local", func(in *cluster.Input) {
			cert, key := "-----BEGIN CERTIFICATE-----", "/pki/ca-key"
			in.TLS = &cluster.TLSInput{CACertPEM: &cert, CAKeyParameter: &key}
		}, "tls.ca_cert_pem", "for aws clusters"},
		{"tls from an ACM Private CA on local", func(in *cluster.Input) {
			arn := "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/11111111-2222-3333-4444-555555555555"
			in.TLS = &cluster.TLSInput{ACMPCAArn: &arn}
		}, "tls.acm_pca_arn", "issues certificates for aws clusters"},
		{"tls margin as long as the validity", func(in *cluster.Input) {
			in.TLS = &cluster.TLSInput{ValidityPeriodHours: intp(100), EarlyRenewalHours: intp(100)}
		}, "tls.early_renewal_hours", "must be shorter than the validity"},
		{"tls validity too short", func(in *cluster.Input) {
			in.TLS = &cluster.TLSInput{ValidityPeriodHours: intp(0), EarlyRenewalHours: intp(0)}
		}, "tls.validity_period_hours", "at least 1 hour"},
		{"wal-g on local", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b/p"}}
		}, "archive.walg_env", "archives with pgBackRest"},
		{"archive without options", func(in *cluster.Input) { in.Archive = &cluster.ArchiveInput{} }, "archive", "needs pgbackrest_options"},
		{"pgbackrest node option", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"pg1-path": "/x"}}
		}, "archive.pgbackrest_options", "belongs to one node"},
		{"backlog bound below twice the WAL kept", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}, MaxBacklogGiB: new(1.0)}
		}, "archive.max_backlog_gib", "below 2560 MiB"},
		{"backlog bound with small WAL", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}, MaxBacklogGiB: new(0.25)}
			in.Parameters = map[string]string{"max_wal_size": "64MB", "wal_keep_size": "0"}
		}, "", ""},
		{"relative data dir", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).DataDir = "data" }, "local.data_dir", "absolute path"},
		{"ports past 65535", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).PortBase = 65534 }, "local.port_base", "choose a base from 1024 to 65533"},
		{"major", func(in *cluster.Input) { in.PostgresMajor = 9 }, "postgres_major", "not supported"},
		{"limits", func(in *cluster.Input) {
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{MemoryMiB: 512, ReadIOPS: 3000, WriteIOPS: 3000, ReadMiBPerSecond: 125, WriteMiBPerSecond: 125, DiskGiB: 20}
		}, "", ""},
		{"negative memory", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{MemoryMiB: -1} }, "local.limits.memory_mib", "positive number of MiB"},
		{"negative read iops", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{ReadIOPS: -3000} }, "local.limits.read_iops", "positive number"},
		{"negative write throughput", func(in *cluster.Input) {
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{WriteMiBPerSecond: -5}
		}, "local.limits.write_mib_per_second", "positive number"},
		{"negative disk", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{DiskGiB: -1} }, "local.limits.disk_gib", "positive number of GiB"},
		{"iops past the bound", func(in *cluster.Input) {
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{WriteIOPS: 20_000_000}
		}, "local.limits.write_iops", "check the unit"},
		{"gp3-like latency", func(in *cluster.Input) {
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{ReadIOPS: 3000, ReadLatencyMS: 1, WriteLatencyMS: 1, FlushLatencyMS: 0.25}
		}, "", ""},
		{"negative read latency", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{ReadLatencyMS: -1} }, "local.limits.read_latency_ms", "latency in milliseconds"},
		{"NaN write latency", func(in *cluster.Input) {
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{WriteLatencyMS: math.NaN()}
		}, "local.limits.write_latency_ms", "latency in milliseconds"},
		{"flush latency in microseconds", func(in *cluster.Input) {
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{FlushLatencyMS: 1500}
		}, "local.limits.flush_latency_ms", "the unit is milliseconds"},
		{"memory below the default shared_buffers", func(in *cluster.Input) { in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{MemoryMiB: 160} }, "local.limits.memory_mib", "at least 192"},
		{"memory below shared_buffers", func(in *cluster.Input) {
			in.Parameters = map[string]string{"shared_buffers": "1GB"}
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{MemoryMiB: 1024}
		}, "local.limits.memory_mib", "shared_buffers is 1024 MiB"},
		{"memory below shared_buffers in pages", func(in *cluster.Input) {
			in.Parameters = map[string]string{"shared_buffers": "65536"} // 512 MiB of 8 kB pages
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{MemoryMiB: 520}
		}, "local.limits.memory_mib", "at least 576"},
		{"restore to a time", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Stanza: "orders", Target: cluster.RestoreTargetInput{Time: "2026-12-02T10:30:00Z"}}
		}, "", ""},
		{"restore without an archive", func(in *cluster.Input) { in.Restore = &cluster.RestoreInput{} }, "restore.archive", "neither pgBackRest options nor a WAL-G environment"},
		{"restore with wal-g on local", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b/p"}}
		}, "restore.archive.walg_env", "restores with pgBackRest"},
		{"restore with a node's option", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"pg1-path": "/x"}}
		}, "restore.archive.pgbackrest_options", "belongs to one node"},
		{"restore with a bad stanza", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Stanza: "a b"}
		}, "restore.archive.stanza", "not valid"},
		{"restore to two targets", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Target: cluster.RestoreTargetInput{LSN: "0/3000000", Immediate: true}}
		}, "restore.target", "sets lsn and immediate"},
		{"restore to a time without a zone", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Target: cluster.RestoreTargetInput{Time: "2026-12-02 10:30:00"}}
		}, "restore.target.time", "not an RFC 3339 time"},
		{"restore to a malformed lsn", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Target: cluster.RestoreTargetInput{LSN: "3000000"}}
		}, "restore.target.lsn", "malformed LSN"},
		{"restore to a quoted restore point", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Target: cluster.RestoreTargetInput{Name: "it's"}}
		}, "restore.target.name", "not a restore point name"},
		{"accept a loss at a malformed lsn", func(in *cluster.Input) { in.AcceptDataLossAtLSN = "3000148" }, "accept_data_loss_at_lsn", "is not a WAL position"},
		{"restore a badly named backup", func(in *cluster.Input) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Backup: "../x y"}
		}, "restore.backup", "neither \"latest\" nor a backup's name"},
		{"restore from the cluster's own archive", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}}
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/r", "repo1-retention-full": "2"}, Stanza: "demo"}
		}, "restore.archive", "archive to it as well"},
		{"restore from another stanza of the same repository", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}}
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}, Stanza: "orders"}
		}, "", ""},
		{"memory fits tuned shared_buffers", func(in *cluster.Input) {
			in.Parameters = map[string]string{"shared_buffers": "128MB"}
			in.Blocks[0].(*localspec.Block).Limits = &localspec.Limits{MemoryMiB: 192}
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := valid()
			tt.change(&in)
			errs := cluster.Validate(cluster.FromInput(in))
			if tt.path == "" {
				if len(errs) > 0 {
					t.Fatalf("Validate: %v, want none", errs)
				}
				return
			}
			for _, e := range errs {
				p := strings.Join(e.Path, ".")
				if p == "" {
					p = "<root>"
				}
				if p == tt.path && strings.Contains(e.Detail, tt.detail) && e.Summary != "" {
					return
				}
			}
			t.Fatalf("Validate: %v; want one at %s containing %q", errs, tt.path, tt.detail)
		})
	}
}

// Each problem is reported once, even where bootstrap and the product both have something to say.
func TestValidateReportsOnce(t *testing.T) {
	errs := cluster.Validate(cluster.FromInput(cluster.Input{Name: "BAD", NodeCount: intp(12), Blocks: localBlock(localspec.Block{DataDir: "/d"}), Archive: &cluster.ArchiveInput{}}))
	seen := map[string]int{}
	for _, e := range errs {
		seen[strings.Join(e.Path, ".")]++
	}
	for _, p := range []string{"name", "node", "archive"} {
		if seen[p] != 1 {
			t.Errorf("%d problems at %s, want 1: %v", seen[p], p, errs)
		}
	}
}

func TestFieldErrors(t *testing.T) {
	a := cluster.Errorf([]string{"local"}, "A", "a")
	b := cluster.Errorf([]string{"nodes"}, "B", "b")
	fields, others := cluster.FieldErrors(joinErrs(a, b, errPlain))
	if len(fields) != 2 || fields[0] != a || fields[1] != b || len(others) != 1 {
		t.Fatalf("FieldErrors = %v, %v", fields, others)
	}
}

func TestPlanned(t *testing.T) {
	members := []cluster.Member{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	got, promoting := cluster.Planned(members, nil, nil, true)
	if promoting || got[0].Role != cluster.RolePrimary || got[1].Role != cluster.RoleStandby || got[2].State != cluster.StateRunning {
		t.Errorf("create: %+v %v", got, promoting)
	}
	known := map[string]string{"n1": "", "n2": cluster.RolePrimary, "n3": cluster.RoleStandby}
	got, promoting = cluster.Planned(members, known, []topology.Step{{Kind: topology.StepReseed, Node: "n1", Source: "n2"}}, false)
	if promoting || got[0].Role != cluster.RoleStandby || got[1].Role != cluster.RolePrimary {
		t.Errorf("reseed of the old primary: %+v", got)
	}
	_, promoting = cluster.Planned(members, known, []topology.Step{{Kind: topology.StepPromote, Node: "n3"}}, false)
	if !promoting {
		t.Error("a promotion makes the roles unknown")
	}
}

func TestConnectionURIAndGone(t *testing.T) {
	m := []cluster.Member{{Name: "a", Role: cluster.RoleStandby, Host: "127.0.0.1", Port: 1}, {Name: "b", Role: cluster.RolePrimary, Host: "::1", Port: 5432}}
	uri, p, ok := cluster.ConnectionURI(m, "postgres", "postgres")
	if !ok || p.Name != "b" || uri != "postgresql://postgres@[::1]:5432/postgres" {
		t.Errorf("ConnectionURI = %q %v %v", uri, p, ok)
	}
	m[0].Role = cluster.RolePrimary
	if _, _, ok := cluster.ConnectionURI(m, "postgres", "postgres"); ok {
		t.Error("two primaries: no URI")
	}
	if (cluster.Status{Members: []cluster.Member{{State: cluster.StateMissing}, {State: cluster.StateStopped}}}).Gone() {
		t.Error("a stopped member is not gone")
	}
	if !(cluster.Status{Members: []cluster.Member{{State: cluster.StateMissing}}}).Gone() {
		t.Error("every member missing is gone")
	}
}

// TestPlanRestore: the restore block's plan from what the source archive holds: the backup chosen for the
// target and the plan's words; refusals at the attribute they are about.
func TestPlanRestore(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	h := &archive.Health{
		Backups: []archive.Backup{
			{Label: "20261201-001000F", Stop: at("2026-12-01T00:10:00Z").Unix(), LSNStop: "0/2000100", Major: 15},
			{Label: "20261202-001000F", Stop: at("2026-12-02T00:10:00Z").Unix(), LSNStop: "0/9000100", Major: 15},
		},
		LastArchived: "00000001000000000000000C", RecoverableFrom: at("2026-12-01T00:10:00Z"), RecoverableTo: at("2026-12-02T09:00:00Z"),
	}
	spec := func(tgt cluster.RestoreTargetInput, backup string) cluster.Spec {
		return cluster.FromInput(cluster.Input{Name: "clone", Blocks: localBlock(localspec.Block{DataDir: "/d"}),
			Restore: &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/src"}, Stanza: "orders", Target: tgt, Backup: backup}})
	}
	p, err := cluster.PlanRestore(spec(cluster.RestoreTargetInput{Time: "2026-12-01T12:00:00Z"}, ""), 15, h, nil)
	if err != nil || p.Backup.Label != "20261201-001000F" {
		t.Fatalf("a time target between the backups: %+v, %v", p.Backup, err)
	}
	want := "restore node-1 from pgBackRest stanza orders in /src: base backup 20261201-001000F (finished 2026-12-01T00:10:00Z), " +
		"then its WAL replayed to 2026-12-01T12:00:00Z, where it becomes the primary of a new timeline; then node-2, node-3 copied from it"
	if got := p.Summary("node-1", []string{"node-2", "node-3"}); got != want {
		t.Errorf("Summary =\n%s\nwant\n%s", got, want)
	}
	if p, err = cluster.PlanRestore(spec(cluster.RestoreTargetInput{}, ""), 0, h, nil); err != nil || p.Backup.Label != "20261202-001000F" ||
		!strings.Contains(p.Summary("node-1", nil), "replayed to the end of the archive, where it becomes the primary of a new timeline (the archive's newest segment arrived at 2026-12-02T09:00:00Z)") {
		t.Errorf("the end of the archive: %+v, %v: %s", p.Backup, err, p.Summary("node-1", nil))
	}
	for _, tc := range []struct {
		name    string
		s       cluster.Spec
		h       *archive.Health
		readErr error
		major   int
		path    string
		detail  string
	}{
		{"unreadable", spec(cluster.RestoreTargetInput{}, ""), nil, errPlain, 15, "restore.archive", "could not"},
		{"no backup", spec(cluster.RestoreTargetInput{}, ""), &archive.Health{}, nil, 15, "restore.archive", "holds no base backup"},
		{"future", spec(cluster.RestoreTargetInput{Time: "2026-12-03T00:00:00Z"}, ""), h, nil, 15, "restore.target.time", "after the newest WAL segment"},
		{"lsn past the end", spec(cluster.RestoreTargetInput{LSN: "1/0"}, ""), h, nil, 15, "restore.target.lsn", "after the end of the newest WAL segment"},
		{"missing backup", spec(cluster.RestoreTargetInput{}, "20990101-000000F"), h, nil, 15, "restore.backup", "holds no backup"},
		{"restore point", spec(cluster.RestoreTargetInput{Name: "x"}, ""), h, nil, 15, "", ""},
		{"another major", spec(cluster.RestoreTargetInput{}, ""), h, nil, 17, "restore.archive", "taken from PostgreSQL 15, and this server runs PostgreSQL 17"},
		{"another major, a backup named", spec(cluster.RestoreTargetInput{}, "20261201-001000F"), h, nil, 16, "restore.backup", "restores into its own major version only"},
		{"major not recorded", spec(cluster.RestoreTargetInput{}, ""), &archive.Health{Backups: []archive.Backup{{Label: "b", Stop: at("2026-12-01T00:10:00Z").Unix()}},
			LastArchived: "00000001000000000000000C", RecoverableFrom: at("2026-12-01T00:10:00Z"), RecoverableTo: at("2026-12-02T09:00:00Z")}, nil, 17, "", ""},
	} {
		_, err := cluster.PlanRestore(tc.s, tc.major, tc.h, tc.readErr)
		if tc.path == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		fields, _ := cluster.FieldErrors(err)
		if len(fields) != 1 || strings.Join(fields[0].Path, ".") != tc.path || !strings.Contains(fields[0].Detail, tc.detail) {
			t.Errorf("%s: %v; want an error at %s containing %q", tc.name, err, tc.path, tc.detail)
		}
	}
}

// A parameter of another major: refused at parameters.<name> for the major given (or aws's default); on
// local without postgres_major it is left to the platform, which knows the installed major.
func TestValidateParameterMajor(t *testing.T) {
	in := cluster.Input{Name: "demo", Blocks: localBlock(localspec.Block{DataDir: "/var/lib/pgnvme/demo"}), Parameters: map[string]string{"io_method": "worker"}}
	if errs := cluster.Validate(cluster.FromInput(in)); len(errs) != 0 {
		t.Errorf("local without postgres_major: %v", errs)
	}
	in.PostgresMajor = 15
	errs := cluster.Validate(cluster.FromInput(in))
	if len(errs) != 1 || strings.Join(errs[0].Path, ".") != "parameters.io_method" || !strings.Contains(errs[0].Detail, "PostgreSQL 18 and later") {
		t.Errorf("local with postgres_major 15: %v", errs)
	}
}
