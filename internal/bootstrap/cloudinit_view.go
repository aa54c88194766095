package bootstrap

import (
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
)

// ec2Scripts are the scripts' paths on the node.
type ec2Scripts struct {
	Install, Disks, Etcd, Secrets, WALGRestore, WALGReplica, Backup, BackupDecide, PostBootstrap, PrePromote, Restore, Takeover string
}

// ec2Source is the other archive a new cluster is restored from, as the templates see it.
type ec2Source struct {
	// Conf is pgBackRest's configuration of the source, Env WAL-G's environment of it; Stanza its stanza.
	Conf, Env, Stanza string
	// Backup is the base backup restored.
	Backup string
	// Plan is the file holding the restore's planned record, RecordPath where the post-bootstrap script
	// puts the completed record, relative to the cluster's own archive's root.
	Plan, RecordPath string
	// restoreCommand reads the source's WAL; recovery are the target's settings (not for templates).
	restoreCommand string
	recovery       map[string]string
}

// ec2View is what the templates see.
type ec2View struct {
	Cluster, Node, Region string
	Major                 int
	AptArch               string

	DiskGlob        string
	DiskCount       int
	DiskWaitSeconds int
	MDName          string
	MDDevice        string
	MountPoint      string
	MountUnit       string
	UnitDir         string
	DataDir         string
	OtherDirs       []string

	WALG           bool
	WALGVersion    string
	WALGURL        string
	WALGSHA256     string
	WALGBin        string
	WALGEnv        string
	PgBackRestBin  string
	PgBackRestConf string
	Stanza         string
	// VerifyPath is where backup.sh records the archive's verification, relative to the archive's root
	// (archive.Location.VerificationPath).
	VerifyPath string
	// AttemptsPath is the directory under which restore.sh notes each attempt, relative to the archive's
	// root (archive.Location.RestoreAttemptsPath).
	AttemptsPath string
	// PsqlArgs reach this node's PostgreSQL as the postgres user over its socket (as pgBackRest does).
	PsqlArgs []string
	// HandOverQuery is the query the pre_promote script asks for the first segment the standby does not
	// hold complete (HandOverQuery).
	HandOverQuery string
	// BackupOnCreate is Archive.BackupOnCreate: the post-bootstrap script
	// takes the first backup.
	BackupOnCreate bool
	// PostBootstrap reports whether Patroni runs Scripts.PostBootstrap.
	PostBootstrap bool
	// Restore reports whether Patroni bootstraps a new cluster from the archive (Scripts.Restore) instead
	// of initdb: the launch of a formed cluster whose every member is lost (RenderEC2Restore).
	Restore bool
	// Source is the other archive a cluster is restored from (RenderEC2Clone); nil restores from the
	// cluster's own.
	Source *ec2Source

	Packages []string
	// CheckCommands are the programs install.sh checks for instead of
	// installing Packages (PGNVME_INSTALL=check).
	CheckCommands []string
	PostgresReads []string
	PostgresDirs  []string
	EnableUnits   []string

	EtcdMember          bool
	EtcdMembers         int
	EtcdEnvFile         string
	EtcdPeerURL         string
	EtcdDataDir         string
	EtcdInitialCluster  string
	EtcdBootstrapID     string
	EtcdOtherEndpoints  string
	EtcdJoinWaitSeconds int
	// EtcdClientURL is this node's etcd member's client URL (etcd members only).
	EtcdClientURL string

	Superuser, ReplicationUser, RESTAPIUser  string
	SSMSuperuser, SSMReplication, SSMRESTAPI string
	SecretsFile                              string
	SSMEndpoint                              string
	PatroniConfig                            string
	PrimaryURL                               string
	// SSMTakeover is the takeover instruction's parameter (SSMParameters.Takeover), TakeoverDir where
	// takeover.sh records what it did (ec2TakeoverDir).
	SSMTakeover, TakeoverDir string
	// ConfigURL is the node's own Patroni GET /config (the backup policy).
	ConfigURL string
	// BackupDefaults are the policy backup.sh uses when Patroni's
	// configuration holds none (backup.Default().Args()).
	BackupDefaults []string

	Scripts ec2Scripts

	// TLS is EC2Node.TLS; TLSFiles the node's TLS files, SSMTLS its bundle's parameter (SSMParameters.TLS).
	TLS      bool
	TLSFiles ec2TLSPaths
	SSMTLS   string
	// EtcdctlTLS are the etcdctl flags that reach the members over TLS with the node's certificate; CurlTLS the curl flags that verify Patroni's REST API. Both empty without TLS.
	EtcdctlTLS, CurlTLS []string

	// etcdMembers are the cluster's etcd members (not for templates).
	etcdMembersList []etcdMember
}

// members are the cluster's etcd members.
func (v ec2View) members() []etcdMember { return v.etcdMembersList }

// restAPIURL is node n's Patroni REST API, https with TLS.
func restAPIURL(n EC2Node) string {
	scheme := "http://"
	if n.TLS {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Patroni.RESTAPIPort))
}

// walgPrefetchDir is WALG_PREFETCH_DIR: on the instance store, beside the
// data directory and outside it.
func walgPrefetchDir(n EC2Node) string {
	return path.Join(n.MountPoint, "walg-prefetch")
}

// newEC2View computes what the templates need from c and n (valid, with
// defaults).
func newEC2View(c Cluster, n EC2Node) ec2View {
	walg := c.Archive != nil && len(c.Archive.WALGEnv) > 0
	members := etcdMembers(c, n)
	v := ec2View{
		Cluster: c.Name, Node: n.Name, Region: n.Region,
		Major:           c.PostgresMajor,
		AptArch:         map[string]string{ArchX86_64: "amd64", ArchARM64: "arm64"}[n.Architecture],
		DiskGlob:        n.InstanceStoreGlob,
		DiskCount:       n.DiskCount,
		DiskWaitSeconds: n.DiskWaitSeconds,
		MDName:          ec2MDName,
		MDDevice:        "/dev/md/" + ec2MDName,
		MountPoint:      n.MountPoint,
		MountUnit:       SystemdMountUnit(n.MountPoint),
		UnitDir:         ec2UnitDir,
		DataDir:         n.DataDir,

		WALG:        walg,
		WALGVersion: n.WALG.Version, WALGURL: n.WALG.URL, WALGSHA256: n.WALG.SHA256, WALGBin: ec2WALGBin, WALGEnv: ec2WALGEnv,
		PgBackRestBin: ec2PgBackRestBin, PgBackRestConf: ec2PgBackRestConf,

		EtcdMembers:         len(members),
		EtcdEnvFile:         path.Join(ec2ConfigDir, "etcd.env"),
		EtcdDataDir:         n.Etcd.DataDir,
		EtcdInitialCluster:  etcdInitialCluster(members),
		EtcdJoinWaitSeconds: n.Etcd.JoinWaitSeconds,

		Superuser: n.Patroni.Superuser, ReplicationUser: n.Patroni.ReplicationUser, RESTAPIUser: n.Patroni.RESTAPIUser,
		SSMSuperuser: n.SSM.SuperuserPassword, SSMReplication: n.SSM.ReplicationPassword, SSMRESTAPI: n.SSM.RESTAPIPassword,
		SSMTakeover: n.SSM.Takeover, TakeoverDir: ec2TakeoverDir,
		SecretsFile:    ec2SecretsFile,
		SSMEndpoint:    n.SSMEndpoint,
		PatroniConfig:  ec2PatroniConfig,
		PrimaryURL:     restAPIURL(n) + "/primary",
		ConfigURL:      restAPIURL(n) + "/config",
		BackupDefaults: backup.Default().Args(),
		PsqlArgs:       []string{"-h", ec2SocketDir, "-p", strconv.Itoa(n.Port), "-d", "postgres"},
		HandOverQuery:  HandOverQuery,
		Scripts: ec2Scripts{
			Install:       path.Join(ec2ScriptDir, "install.sh"),
			Disks:         path.Join(ec2ScriptDir, "disks.sh"),
			Etcd:          path.Join(ec2ScriptDir, "etcd.sh"),
			Secrets:       path.Join(ec2ScriptDir, "secrets.sh"),
			WALGRestore:   path.Join(ec2ScriptDir, "walg-restore.sh"),
			WALGReplica:   path.Join(ec2ScriptDir, "walg-replica.sh"),
			Backup:        path.Join(ec2ScriptDir, "backup.sh"),
			BackupDecide:  path.Join(ec2ScriptDir, "backup-decide.py"),
			PostBootstrap: path.Join(ec2ScriptDir, "post-bootstrap.sh"),
			PrePromote:    path.Join(ec2ScriptDir, "pre-promote.sh"),
			Restore:       path.Join(ec2ScriptDir, "restore.sh"),
			Takeover:      path.Join(ec2ScriptDir, "takeover.sh"),
		},
		TLS:             n.TLS,
		TLSFiles:        newEC2TLSPaths(),
		SSMTLS:          n.SSM.TLS,
		etcdMembersList: members,
	}
	if c.Archive != nil {
		v.Stanza = c.Archive.stanza(c)
		tool := archive.ToolPgBackRest
		if walg {
			tool = archive.ToolWALG
		}
		v.VerifyPath = archive.Location{Tool: tool, Stanza: v.Stanza}.VerificationPath()
		v.AttemptsPath = archive.Location{Tool: tool, Stanza: v.Stanza}.RestoreAttemptsPath()
		v.BackupOnCreate = c.Archive.BackupOnCreate
		// pgBackRest needs its stanza before the first archive-push; WAL-G
		// needs nothing before its first backup.
		v.PostBootstrap = !walg || v.BackupOnCreate
	}
	var others []string
	for _, m := range members {
		if m.name == n.Name {
			v.EtcdMember = true
			v.EtcdPeerURL = m.peerURL
			v.EtcdClientURL = m.clientURL
			v.EtcdBootstrapID = m.bootstrapID
		} else {
			others = append(others, m.clientURL)
		}
	}
	v.EtcdOtherEndpoints = strings.Join(others, ",")

	v.Packages = []string{
		"postgresql-" + strconv.Itoa(c.PostgresMajor), "postgresql-client-" + strconv.Itoa(c.PostgresMajor),
		"patroni", "python3-etcd", "python3-psycopg2", "python3-dnspython",
		"etcd-client", "awscli", "curl", "ca-certificates", "xfsprogs",
	}
	if v.EtcdMember {
		v.Packages = append(v.Packages, "etcd-server")
	}
	if n.DiskCount > 1 {
		v.Packages = append(v.Packages, "mdadm")
	}
	v.CheckCommands = []string{"patroni", "etcdctl", "aws", "curl", "mkfs.xfs",
		"/usr/lib/postgresql/" + strconv.Itoa(c.PostgresMajor) + "/bin/postgres"}
	if v.EtcdMember {
		v.CheckCommands = append(v.CheckCommands, "etcd")
	}
	if n.DiskCount > 1 {
		v.CheckCommands = append(v.CheckCommands, "mdadm")
	}
	if walg {
		v.CheckCommands = append(v.CheckCommands, ec2WALGBin)
	} else {
		v.CheckCommands = append(v.CheckCommands, ec2PgBackRestBin)
	}
	v.PostgresReads = []string{ec2PatroniConfig}
	if walg {
		v.PostgresReads = append(v.PostgresReads, ec2WALGEnv)
		v.OtherDirs = []string{walgPrefetchDir(n)}
	} else {
		v.Packages = append(v.Packages, "pgbackrest")
		v.PostgresReads = append(v.PostgresReads, ec2PgBackRestConf)
		v.PostgresDirs = []string{ec2PgBackRestLog, ec2PgBackRestSpool}
	}
	if n.TLS {
		t := v.TLSFiles
		v.EtcdctlTLS = []string{"--cacert=" + t.CA, "--cert=" + t.Cert, "--key=" + t.Key}
		v.CurlTLS = []string{"--cacert", t.CA}
	}
	v.EnableUnits = []string{"pgnvme-disks.service", "pgnvme-backup.timer"}
	if n.TLS {
		v.EnableUnits = append(v.EnableUnits, "pgnvme-tls.timer")
	}
	if v.EtcdMember {
		v.EnableUnits = append([]string{"pgnvme-etcd.service"}, v.EnableUnits...)
		v.EnableUnits = append(v.EnableUnits, "pgnvme-takeover.timer")
	}
	return v
}
