package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// clusterLimitsSchema is local.limits.
func clusterLimitsSchema() schema.SingleNestedBlock {
	limit := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Optional: true, MarkdownDescription: desc + " Unset or `0`: no limit. Changed in place (the cgroup's files are rewritten, nothing restarts)."}
	}
	latency := func(desc string) schema.Float64Attribute {
		return schema.Float64Attribute{Optional: true, MarkdownDescription: desc + fmt.Sprintf(" From `0` to `%d`; unset or `0`: "+
			"none. Setting any latency gives each node a device (as an I/O limit does) served through the latency layer; adding or "+
			"removing the layer replaces the cluster, changing a latency is applied in place (the running layer reloads it).", localspec.MaxLatencyMS)}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Per-node resource limits, so \"dataset much larger than memory\" and \"a volume with gp3's baseline\" are real " +
			"on one machine. Each node's server processes (the postmaster and everything it starts) run in a cgroup of their own " +
			"(cgroup v1 `memory` and `blkio` controllers, or v2 `memory` and `io`); with any I/O limit or `disk_gib`, each node's " +
			"data lives on a block device of its own (a loop device on a sparse file next to the data directory, XFS), so " +
			"throttling applies to that node alone. Needs root and the controllers: a machine without them is refused at plan. " +
			"With a latency (`read_latency_ms`, `write_latency_ms`, `flush_latency_ms`) each node's device is also served through " +
			"a latency layer (a FUSE server per node) that makes every read, write and flush that reaches the device take at least " +
			"that long, as a network volume's I/O does; the IOPS and throughput limits apply on top. " +
			"Memory and I/O limits and latencies change in place; adding or removing the per-node device or the latency layer, " +
			"or changing `disk_gib`, replaces " +
			"the cluster (the plan says so). Everything is removed on destroy. On cgroup v1, buffered writes are throttled " +
			"only when a server process writes them back itself (commits' and checkpoints' fsyncs); the kernel's flusher " +
			"threads are not limited.",
		Attributes: map[string]schema.Attribute{
			"memory_mib": limit(fmt.Sprintf("Memory of each node's server processes in MiB, page cache included (cgroup v1 "+
				"`memory.limit_in_bytes`, v2 `memory.max`). It must exceed `shared_buffers` (PostgreSQL's default 128MB when "+
				"`parameters` do not set it) by at least %d MiB; `pgnvme_tuning` with `memory_gib = memory_mib / 1024` sizes the "+
				"parameters for it.", localspec.MemoryHeadroomMiB)),
			"read_iops":  limit("Read operations per second on each node's own device (cgroup v1 `blkio.throttle.read_iops_device`, v2 `io.max riops`). gp3's baseline is `3000`."),
			"write_iops": limit("Write operations per second on each node's own device (`write_iops_device`, v2 `wiops`). gp3's baseline is `3000`."),
			"read_mib_per_second": limit("Read throughput on each node's own device in MiB/s (`read_bps_device`, v2 `rbps`). " +
				"gp3's baseline is `125`."),
			"write_mib_per_second": limit("Write throughput on each node's own device in MiB/s (`write_bps_device`, v2 `wbps`). " +
				"gp3's baseline is `125`."),
			"read_latency_ms": latency("Least time each read of each node's device takes, in milliseconds (fractions allowed: `0.5`). " +
				"A read that PostgreSQL finds in shared_buffers or the page cache does not reach the device and costs nothing; a miss " +
				"costs this. gp3 quotes single-digit milliseconds; about `1` is typical for a small random read on an idle volume."),
			"write_latency_ms": latency("Least time each write reaching each node's device takes, in milliseconds. A volume with no " +
				"volatile cache (EBS) acknowledges a write when it is stored, so this is what a WAL fsync waits for; writes the kernel " +
				"writes back in the background pay it too but nobody waits for them."),
			"flush_latency_ms": latency("Least time each cache flush of each node's device takes, in milliseconds (what `fsync` " +
				"and `fdatasync` send after their writes; XFS also flushes around its journal writes). EBS has no volatile cache, so " +
				"its flushes are nearly free and `write_latency_ms` carries the cost; set this to model a device whose flush is slow."),
			"disk_gib": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Size of each node's own device in GiB (a sparse file: it takes only what the node "+
					"writes, but the file system holding `data_dir` must have this much free per node). Setting it gives each node a "+
					"device even without I/O limits. Defaults to `%d` when an I/O limit is set. Changing it replaces the cluster.",
					localspec.DefaultDiskGiB),
			},
		},
	}
}

func (r *clusterResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = clusterSchema()
}

// clusterSchema is pgnvme_cluster's schema.
func clusterSchema() schema.Schema {
	nodeName := pureStringValidator("Invalid Node Name", cluster.CheckNodeName)
	return schema.Schema{
		MarkdownDescription: "A PostgreSQL cluster: one primary and its standbys, with synchronous quorum replication, " +
			"tuned parameters and continuous archiving, managed as one unit. On the `local` platform the nodes are " +
			"PostgreSQL processes on this machine (like `kind` for Kubernetes), for laptops, demos and CI; on `aws` they are " +
			"EC2 instances on instance-store NVMe, one per availability zone, with Patroni and etcd. Exactly one " +
			"platform block is set. A node that " +
			"is lost shows as drift and the next apply replaces that node alone; a lost primary is replaced by " +
			"promoting the standby with the highest flushed WAL position.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The cluster's name. Import takes a platform-specific ID instead: `local:<data_dir>` for a local cluster.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster name (lower-case letters, digits, `-`; it names the pgBackRest stanza). Changing it replaces the cluster.",
				Validators:          []validator.String{pureStringValidator("Invalid Cluster Name", cluster.CheckName)},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"accept_data_loss_at_lsn": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "When the primary and as many standbys as `synchronous.number` are lost together, " +
					"no survivor is proven to hold every acknowledged commit, and the plan refuses, naming the furthest survivor's WAL " +
					"position (after it has replayed what the archive holds). Set this to exactly that position (such as `0/3000148`) to " +
					"accept losing whatever only the lost nodes held: the apply then promotes that survivor and copies the lost nodes from it. " +
					"On `aws`, where etcd lost its majority with the lost nodes, the survivor must be the one node left: its etcd member " +
					"becomes a new one-member etcd cluster (on an instruction in SSM that its node acts on) and Patroni fails over to it. " +
					"It acts only while the survivor is at exactly that position, so a value left in the configuration never accepts a later " +
					"loss; remove it afterwards. See [Node loss and repair](#node-loss-and-repair).",
			},
			"postgres_major": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: fmt.Sprintf("PostgreSQL major version. On `aws` the nodes install it; unset means %d. On `local` each cluster runs `/usr/lib/postgresql/<major>/bin` (or `initdb` on `PATH` when it is of that major), so two majors run side by side; unset means the newest installed, recorded in state at create. A major that is not installed is refused at plan, naming its package. Changing it replaces the cluster.", capacity.DefaultPostgresMajor),
				Validators:          []validator.Int64{int64validator.Between(capacity.MinPostgresMajor, capacity.MaxPostgresMajor)},
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplace()},
			},
			"node_count": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Number of nodes, named `node-1` .. `node-N`, `node-1` the first primary. Defaults to " +
					"`3`; 1 to 9. Conflicts with `node` blocks.",
				Validators: []validator.Int64{int64validator.Between(1, 9), int64validator.ConflictsWith(path.MatchRoot("node"))},
			},
			"parameters": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "PostgreSQL parameters for every node, typically " +
					"`data.pgnvme_tuning.x.postgres_parameters`. A change is applied by reload, or by restarting one node at " +
					"a time (standbys first, the primary last) when a parameter needs a restart (`pg_settings.context`). The " +
					"settings the cluster manages itself (ports, replication, archiving) are refused.",
			},
			"nodes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Every node as last seen.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":  schema.StringAttribute{Computed: true, MarkdownDescription: "Node name."},
					"zone":  schema.StringAttribute{Computed: true, MarkdownDescription: "Zone label."},
					"role":  schema.StringAttribute{Computed: true, MarkdownDescription: "`primary` or `standby`; `\"\"` when the node cannot be read."},
					"host":  schema.StringAttribute{Computed: true, MarkdownDescription: "Address it listens on."},
					"port":  schema.Int64Attribute{Computed: true, MarkdownDescription: "TCP port."},
					"state": schema.StringAttribute{Computed: true, MarkdownDescription: "`running`, `stopped` or `missing`. On `local`: `stopped` is a data directory without a server process, `missing` no data directory; anything but `running` plans a repair. On `aws`: `missing` is a node whose instance is gone or stopped (its instance store with it), which the apply replaces; `stopped` a node whose instance runs but whose PostgreSQL Patroni does not list as running (Patroni restarts it; the apply replaces nothing for it)."},
				}},
			},
			"primary": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Where the primary listens; null while no single primary is known.",
				Attributes: map[string]schema.Attribute{
					"host": schema.StringAttribute{Computed: true, MarkdownDescription: "Host."},
					"port": schema.Int64Attribute{Computed: true, MarkdownDescription: "Port."},
				},
			},
			"connection_uri": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "libpq URI without a password. On `local`: the primary's (null while no single primary is known); " +
					"the local platform trusts connections from 127.0.0.1 (documented as local-only). On `aws`: a multi-host URI over every " +
					"node with `target_session_attrs=read-write`, so libpq and pgx clients find the primary after a failover without " +
					"extra infrastructure; the password is the SSM SecureString `<aws.ssm_parameter_path>/superuser-password`.",
			},
			"read_only_connection_uri": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "On `aws`: a libpq multi-host URI over every node with `target_session_attrs=prefer-standby` " +
					"(a standby when one answers, else the primary), without a password. Null on `local`.",
			},
			"synchronous_standby_names": schema.StringAttribute{Computed: true, MarkdownDescription: "The value in force on the primary; null when the last refresh could not read it (a warning says why)."},
			"synchronous_degraded": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "True when fewer named standbys stream than `synchronous.number`: with `preferred` the number was lowered; with `required` commits wait.",
			},
			"restored": clusterRestoredSchema(),
			"archive_status": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "The archive as the last refresh read it (see [Archive health](#archive-health)); null without `archive`, " +
					"or when the archive could not be read (a warning says why). Use it in `check` blocks.",
				Attributes: map[string]schema.Attribute{
					"last_archived_wal": schema.StringAttribute{Computed: true, MarkdownDescription: "The newest complete WAL segment in the archive; null when it holds none."},
					"last_archived_at":  schema.StringAttribute{Computed: true, MarkdownDescription: "When that segment reached the archive (RFC 3339); null when not known."},
					"archived_segments": schema.Int64Attribute{Computed: true, MarkdownDescription: "How many complete WAL segments the archive holds."},
					"first_missing_wal": schema.StringAttribute{Computed: true, MarkdownDescription: "The verification of every refresh: the first segment " +
						"missing between the oldest backup's first segment and the newest archived one (a restore cannot replay past it; a plan warning says " +
						"so); null when the archive is continuous."},
					"unarchived_segments": schema.Int64Attribute{Computed: true, MarkdownDescription: "Complete WAL segments the primary wrote that the archive lacks; null when no primary could be read."},
					"archiving_ok": schema.BoolAttribute{Computed: true, MarkdownDescription: "False when segments wait for the archive and none arrived for longer than " +
						"twice `archive_timeout` plus 10 s (archiving fails or cannot keep up: a plan warning says so); null when no primary could be read."},
					"failed_count": schema.Int64Attribute{Computed: true, MarkdownDescription: "How often the primary's `archive_command` failed since its " +
						"statistics were reset (`pg_stat_archiver.failed_count`; a promoted standby counts its own); null when no primary could be read."},
					"last_failed_wal":   schema.StringAttribute{Computed: true, MarkdownDescription: "The segment of the primary's newest archiving failure; null when none failed or no primary could be read."},
					"last_failed_at":    schema.StringAttribute{Computed: true, MarkdownDescription: "When that failure happened (RFC 3339); null when none failed or no primary could be read."},
					"backup_count":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Base backups in the archive."},
					"last_backup_label": schema.StringAttribute{Computed: true, MarkdownDescription: "The newest base backup's name (pgBackRest's label, WAL-G's backup name); null without one."},
					"last_backup_type":  schema.StringAttribute{Computed: true, MarkdownDescription: "Its kind: `full`, `diff` or `incr` (pgBackRest), `full` or `delta` (WAL-G)."},
					"last_backup_at":    schema.StringAttribute{Computed: true, MarkdownDescription: "When it finished (RFC 3339)."},
					"last_backup_size_bytes": schema.Int64Attribute{Computed: true, MarkdownDescription: "The size of the database it copied " +
						"(pgBackRest's backup size; WAL-G's uncompressed size)."},
					"recoverable_from": schema.StringAttribute{Computed: true, MarkdownDescription: "The earliest moment a restore from the archive alone can reach: " +
						"the oldest backup's end (RFC 3339); null without a backup."},
					"recoverable_to": schema.StringAttribute{Computed: true, MarkdownDescription: "The latest such moment: when the newest archived segment arrived (RFC 3339); " +
						"null without a backup."},
					"verified_timeline": schema.Int64Attribute{Computed: true, MarkdownDescription: "The timeline the archive's last verification " +
						"covers: after every timeline switch (a failover, a promotion) the primary verifies the archive with the archiver's own tool " +
						"(`pgbackrest verify`, `wal-g wal-verify integrity timeline`) once it has archived the WAL the switch left, and records the " +
						"verdict in the archive (`pgnvme/` beside the archiver's directories). Null while the cluster never switched timelines. " +
						"A switch left unverified for 15 minutes is a plan warning."},
					"verified_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When that verification ran (RFC 3339); null without one."},
					"verification_ok": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether it passed: false when the tool reported an error " +
						"(a damaged file; pgBackRest also a hole in its WAL ranges after the oldest backup's first segment; WAL-G a `FAILURE` of either " +
						"check), a plan warning with the detail; it is verified again an hour after a failure. Null without one."},
					"verification_detail": schema.StringAttribute{Computed: true, MarkdownDescription: "What it found: the ranges checked, or the errors; null without one."},
				},
			},
		},
		Blocks: map[string]schema.Block{
			"node": schema.ListNestedBlock{
				MarkdownDescription: "One block per node, in priority order (the first is the first primary), up to 9; " +
					"none means `node_count` nodes. `zone` is a label on the local platform (typically from `pgnvme_placement`, " +
					"with a `dynamic \"node\"` block over its `nodes`).",
				Validators: []validator.List{listvalidator.SizeBetween(1, 9)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Node name; also the standby's `application_name`.", Validators: []validator.String{nodeName}},
					"zone": schema.StringAttribute{Optional: true, MarkdownDescription: "Zone label. Defaults to `local`."},
				}},
			},
			"synchronous": schema.SingleNestedBlock{
				MarkdownDescription: "Synchronous replication, with CloudNativePG's meanings. Unset: `any`, 1 standby " +
					"(0 for a single node), `required`, `on`.",
				Attributes: map[string]schema.Attribute{
					"method": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "`any` (default; quorum: the fastest `number` standbys) or `first` (priority order).",
						Validators:          []validator.String{stringvalidator.OneOf("any", "first")},
					},
					"number": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Standbys that confirm each commit. Defaults to 1 (0 for a single node). With `required` it must be below the node count.",
						Validators:          []validator.Int64{int64validator.Between(0, 8)},
					},
					"data_durability": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "`required` (default): never lower `number`, so with too few standbys commits wait. " +
							"`preferred`: when standbys are missing, lower `number` to the healthy ones so writes never stop " +
							"(`synchronous_degraded` shows it). On the local platform this is enforced at each apply.",
						Validators: []validator.String{stringvalidator.OneOf("required", "preferred")},
					},
					"commit": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "`synchronous_commit`: `on` (default), `remote_apply`, `remote_write`, `local` or `off`.",
						Validators:          []validator.String{stringvalidator.OneOf(synchronousCommitLevels...)},
					},
				},
			},
			"archive": schema.SingleNestedBlock{
				MarkdownDescription: "Continuous archiving. The local platform archives with pgBackRest; WAL-G is the EC2 platform's archiver.",
				Attributes: map[string]schema.Attribute{
					"pgbackrest_options": schema.MapAttribute{
						ElementType: types.StringType,
						Optional:    true,
						MarkdownDescription: "pgBackRest repository options (`repo1-*`), typically " +
							"`pgnvme_archive_bucket.x.pgbackrest_options` plus credentials, or `repo1-type = posix` for a local repository.",
						Validators: []validator.Map{mapvalidator.SizeAtLeast(1)},
					},
					"walg_env": schema.MapAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "WAL-G environment (`pgnvme_archive_bucket.x.walg_env`), for the EC2 platform.",
						Validators:          []validator.Map{mapvalidator.SizeAtLeast(1)},
					},
					"backup_on_create": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Take a full backup right after the primary starts, so standbys (and later replacements) are seeded from the archive. Defaults to `true`.",
					},
					"max_backlog_gib": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "The most WAL (GiB) a node keeps for an archive that does not take it; see [When the archive is down](#when-the-archive-is-down). " +
							"Beyond it `archive_command` drops each segment (the node keeps writing; the archive has a hole that `archive_status.first_missing_wal` reports). " +
							"Unset keeps every segment until the archive takes it: the node stops when its disk is full, and the archive has no hole. " +
							"At least twice `max_wal_size` plus `wal_keep_size`.",
						Validators: []validator.Float64{float64validator.AtLeast(1.0 / 1024)},
					},
				},
			},
			"backup":  clusterBackupSchema(),
			"restore": clusterRestoreSchema(),
			"tls":     clusterTLSSchema(),
			"local": schema.SingleNestedBlock{
				MarkdownDescription: "The local platform: the nodes run as PostgreSQL processes on this machine, listening on " +
					"127.0.0.1. Its inputs, and what only this platform reports. Changing `data_dir`, `port_base` or `run_as_user` replaces the cluster.",
				Attributes: map[string]schema.Attribute{
					"data_dir": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Required in `local {}`. Absolute directory holding one data directory per node (`<data_dir>/<node>`); " +
							"it must be writable, and reachable by `run_as_user`. Keep the path short: PostgreSQL's socket path " +
							"limit is 107 bytes.",
						Validators:    []validator.String{requiredInBlock(), stringvalidator.RegexMatches(regexp.MustCompile(`^/`), "must be an absolute path")},
						PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
					},
					"port_base": schema.Int64Attribute{
						Optional:            true,
						Computed:            true,
						Default:             int64default.StaticInt64(localspec.DefaultPortBase),
						MarkdownDescription: "First TCP port on 127.0.0.1; node `i` (in creation order) listens on `port_base + i`, so every port must be from 1024 to 65535. Defaults to `54320`.",
						PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
					},
					"run_as_user": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "OS user that runs PostgreSQL (it refuses to run as root). Defaults to `postgres` when Terraform runs as root, else the current user. Changing it replaces the cluster.",
						PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
					},
					"data_dirs": schema.MapAttribute{
						ElementType: types.StringType,
						Computed:    true,
						MarkdownDescription: "Each node's data directory, by node name (`<data_dir>/<node>`, or `<data_dir>/<node>/data` on a node's own " +
							"device; a node keeps its directory for life).",
					},
					"cgroups": schema.MapAttribute{
						ElementType: types.StringType,
						Computed:    true,
						MarkdownDescription: "With `limits`: each node's cgroup, by node name, relative to each controller's root " +
							"(`pgnvme/<name>-<8 hex digits>/<node>`; on cgroup v1 under `/sys/fs/cgroup/memory` and `/sys/fs/cgroup/blkio`, " +
							"on v2 under `/sys/fs/cgroup`). Its counters show what the node uses, such as `memory.max_usage_in_bytes` " +
							"and `blkio.throttle.io_serviced`. Null without `limits`.",
					},
					"block_devices": schema.MapAttribute{
						ElementType: types.StringType,
						Computed:    true,
						MarkdownDescription: "With I/O limits or `limits.disk_gib`: each node's own block device, by node name (a loop device " +
							"such as `/dev/loop3`, on the sparse file `<data_dir>/<node>.img`, XFS, mounted at `<data_dir>/<node>`). " +
							"The number can change after a restart of the machine. Null without a device per node.",
					},
					"durability_watcher_running": schema.BoolAttribute{
						Computed: true,
						MarkdownDescription: "With `data_durability = \"preferred\"`, a small watcher process lowers the synchronous " +
							"number within about a second when standbys stop streaming, and restores it when they return, between " +
							"applies (on other platforms Patroni does this). True while it runs; a watcher that died shows as a " +
							"change here and the next apply restarts it. Always false with `required`.",
					},
					"backup_scheduler_running": schema.BoolAttribute{
						Computed: true,
						MarkdownDescription: "With `archive`, a small scheduler process takes the `backup` block's base backups on the " +
							"primary between applies (on EC2 each node's `pgnvme-backup.timer` does). True while it runs; a scheduler that " +
							"died shows as a change here and the next apply restarts it. False without `archive`.",
					},
				},
				Blocks: map[string]schema.Block{"limits": clusterLimitsSchema()},
			},
			"aws": clusterAWSSchema(),
		},
	}
}

// objectAttrTypes are the attribute types of an object type (a single block or nested attribute).
func objectAttrTypes(t attr.Type) map[string]attr.Type {
	return t.(types.ObjectType).AttrTypes
}

// elemAttrTypes are the attribute types of a list of objects' elements (a list block or nested attribute).
func elemAttrTypes(t attr.Type) map[string]attr.Type {
	return objectAttrTypes(t.(types.ListType).ElemType)
}

// outputNames are the attributes the configuration cannot set (computed only), by name.
func outputNames(attrs map[string]schema.Attribute) map[string]bool {
	out := map[string]bool{}
	for name, a := range attrs {
		if a.IsComputed() && !a.IsOptional() && !a.IsRequired() {
			out[name] = true
		}
	}
	return out
}
