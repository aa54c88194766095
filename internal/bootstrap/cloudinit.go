package bootstrap

import (
	"bytes"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// ec2Templates are the node's scripts and systemd units, rendered with
// text/template. They are real files so that shellcheck and editors read
// them; the tests run shellcheck on every rendering.
//
//go:embed ec2
var ec2Templates embed.FS

var ec2Template = template.Must(template.New("ec2").
	Option("missingkey=error").
	Funcs(template.FuncMap{"sh": quoteShell, "words": shellWords}).
	ParseFS(ec2Templates, "ec2/*"))

// shellWords writes ws as shell words separated by spaces.
func shellWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = quoteShell(w)
	}
	return strings.Join(q, " ")
}

// ec2Scripts are the scripts' paths on the node.
type ec2Scripts struct {
	Install, Disks, Etcd, Secrets, WALGRestore, WALGReplica, Backup, PostBootstrap string
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
	// BackupOnCreate is Archive.BackupOnCreate: the post-bootstrap script
	// takes the first backup.
	BackupOnCreate bool
	// PostBootstrap reports whether Patroni runs Scripts.PostBootstrap.
	PostBootstrap bool

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

	Superuser, ReplicationUser, RESTAPIUser  string
	SSMSuperuser, SSMReplication, SSMRESTAPI string
	SecretsFile                              string
	SSMEndpoint                              string
	PatroniConfig                            string
	PrimaryURL                               string
	BackupSchedule                           string

	Scripts ec2Scripts

	// etcdMembers are the cluster's etcd members (not for templates).
	etcdMembersList []etcdMember
}

// members are the cluster's etcd members.
func (v ec2View) members() []etcdMember { return v.etcdMembersList }

// RenderEC2 renders the cloud-init user-data of EC2 node n of cluster c:
// everything the node needs to join the cluster from a bare Debian 12 AMI.
// It validates c and n first; the error joins every problem found, each a
// sentence saying what to change.
//
// The user-data holds no secret: the passwords are SSM parameters the node
// reads at boot. It is the same for every boot of the instance; what must
// happen on every boot (the instance-store disks, the passwords) runs from
// systemd units it installs.
func RenderEC2(c Cluster, n EC2Node) (UserData, error) {
	if err := c.Validate(); err != nil {
		return UserData{}, err
	}
	n = n.WithDefaults(c)
	if err := c.validateEC2(n); err != nil {
		return UserData{}, err
	}

	view := newEC2View(c, n)
	ec := c
	if a := c.Archive; a != nil {
		a2 := *a
		if view.WALG {
			a2.WALGEnv = maps.Clone(a.WALGEnv)
			// WAL-G reaches the server over its socket as the superuser
			// (peer authentication), and prefetches WAL outside the data
			// directory.
			a2.WALGEnv["PGHOST"] = ec2SocketDir
			a2.WALGEnv["PGPORT"] = strconv.Itoa(n.Port)
			a2.WALGEnv["PGUSER"] = n.Patroni.Superuser
			a2.WALGEnv["PGDATABASE"] = "postgres"
			a2.WALGEnv["WALG_PREFETCH_DIR"] = walgPrefetchDir(n)
		} else {
			a2.PgBackRestOptions = maps.Clone(a.PgBackRestOptions)
			if a2.PgBackRestOptions["repo1-type"] == "s3" && a2.PgBackRestOptions["repo1-s3-key-type"] == "" {
				// The instance role, never keys in user-data.
				a2.PgBackRestOptions["repo1-s3-key-type"] = "auto"
			}
		}
		ec.Archive = &a2
	}
	node := Node{
		Name:                 n.Name,
		Port:                 n.Port,
		DataDir:              n.DataDir,
		SocketDir:            ec2SocketDir,
		PgBackRestConfigPath: ec2PgBackRestConf,
		PgBackRestLogDir:     ec2PgBackRestLog,
		PgBackRestSpoolDir:   ec2PgBackRestSpool,
		WALGEnvPath:          ec2WALGEnv,
		ReplicationUser:      n.Patroni.ReplicationUser,
		AllowedCIDRs:         n.AllowedCIDRs,
		Patroni:              true,
	}
	if view.WALG {
		node.ArchiverPath = ec2WALGBin
	} else {
		node.ArchiverPath = ec2PgBackRestBin
	}
	r, err := Render(ec, node)
	if err != nil {
		return UserData{}, err
	}

	dynamic := patroniDynamic(ec, n, r)
	patroniYAML := func(dcs yamlMap) string {
		return fmt.Sprintf("# Patroni configuration of node %s in cluster %s, rendered by pgnvme.\n"+
			"# No password here: Patroni reads them from its environment (PATRONI_*_PASSWORD, from SSM at boot).\n",
			n.Name, c.Name) + patroniDoc(ec, n, r, view, dcs).String()
	}

	var files []File
	add := func(p string, mode fs.FileMode, content string) {
		files = append(files, File{Path: p, Mode: mode, Owner: "root:root", Content: content})
	}
	script := func(p, tmpl string) error {
		s, err := execTemplate(tmpl, view)
		if err != nil {
			return err
		}
		add(p, 0o755, s)
		return nil
	}
	unit := func(name string) error {
		s, err := execTemplate(name, view)
		if err != nil {
			return err
		}
		add(path.Join(ec2UnitDir, name), 0o644, s)
		return nil
	}
	var errs []error
	errs = append(errs,
		script(view.Scripts.Install, "install.sh"),
		script(view.Scripts.Disks, "disks.sh"),
		script(view.Scripts.Secrets, "secrets.sh"),
		script(view.Scripts.Backup, "backup.sh"))
	if view.PostBootstrap {
		errs = append(errs, script(view.Scripts.PostBootstrap, "post-bootstrap.sh"))
	}
	if view.WALG {
		errs = append(errs,
			script(view.Scripts.WALGRestore, "walg-restore.sh"),
			script(view.Scripts.WALGReplica, "walg-replica.sh"))
	}
	if view.EtcdMember {
		errs = append(errs, script(view.Scripts.Etcd, "etcd.sh"))
		add(view.EtcdEnvFile, 0o644, etcdEnvFile(c, n, view))
	}
	add(ec2PatroniConfig, 0o640, patroniYAML(dynamic))
	patroniFile := len(files) - 1
	if view.WALG {
		add(ec2WALGEnv, 0o640, r.WALGEnvFile)
	} else {
		add(ec2PgBackRestConf, 0o640, r.PgBackRestConf)
	}
	for _, u := range []string{"pgnvme-disks.service", "pgnvme-secrets.service", "pgnvme-patroni.service",
		"pgnvme-backup.service", "pgnvme-backup.timer"} {
		errs = append(errs, unit(u))
	}
	if view.EtcdMember {
		errs = append(errs, unit("pgnvme-etcd.service"))
	}
	if err := errors.Join(errs...); err != nil {
		return UserData{}, fmt.Errorf("provider bug: rendering node %s's scripts: %w", n.Name, err)
	}

	// The identity: the same user-data with the DCS part left out, which Patroni reads only when it
	// creates the cluster (later changes go through PATCH /config).
	static := slices.Clone(files)
	static[patroniFile].Content = patroniYAML(yamlMap{{"dynamic_configuration", "applied through Patroni's REST API"}})
	u := UserData{
		CloudConfig:   cloudConfig(c, n, files, view),
		Files:         files,
		PatroniYAML:   files[patroniFile].Content,
		EtcdMember:    view.EtcdMember,
		DynamicConfig: dynamic.toJSON(),
		Identity:      cloudConfig(c, n, static, view),
	}
	if size := len(u.Gzip()); size > MaxUserDataBytes {
		return UserData{}, problemf("The user-data of node %s is %d bytes even with gzip, more than the %d bytes EC2 accepts; shorten the parameters or the archive's settings.", n.Name, size, MaxUserDataBytes)
	}
	return u, nil
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
		MountUnit:       systemdMountUnit(n.MountPoint),
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
		SecretsFile:    ec2SecretsFile,
		SSMEndpoint:    n.SSMEndpoint,
		PatroniConfig:  ec2PatroniConfig,
		PrimaryURL:     "http://" + net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Patroni.RESTAPIPort)) + "/primary",
		BackupSchedule: n.BackupSchedule,
		Scripts: ec2Scripts{
			Install:       path.Join(ec2ScriptDir, "install.sh"),
			Disks:         path.Join(ec2ScriptDir, "disks.sh"),
			Etcd:          path.Join(ec2ScriptDir, "etcd.sh"),
			Secrets:       path.Join(ec2ScriptDir, "secrets.sh"),
			WALGRestore:   path.Join(ec2ScriptDir, "walg-restore.sh"),
			WALGReplica:   path.Join(ec2ScriptDir, "walg-replica.sh"),
			Backup:        path.Join(ec2ScriptDir, "backup.sh"),
			PostBootstrap: path.Join(ec2ScriptDir, "post-bootstrap.sh"),
		},
		etcdMembersList: members,
	}
	if c.Archive != nil {
		v.Stanza = c.Archive.stanza(c)
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
	v.EnableUnits = []string{"pgnvme-disks.service", "pgnvme-backup.timer"}
	if v.EtcdMember {
		v.EnableUnits = append([]string{"pgnvme-etcd.service"}, v.EnableUnits...)
	}
	return v
}

// systemdMountUnit is the name of the mount unit for p (a valid path, see
// safePathPattern), as systemd-escape --path --suffix=mount writes it.
func systemdMountUnit(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return "-.mount"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			b.WriteByte('-')
		case c == '-', c == '.' && (i == 0 || p[i-1] == '/'):
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String() + ".mount"
}

// execTemplate renders the named template with view.
func execTemplate(name string, view ec2View) (string, error) {
	var b bytes.Buffer
	if err := ec2Template.ExecuteTemplate(&b, name, view); err != nil {
		return "", err
	}
	return b.String(), nil
}

// etcdEnvFile is the etcd member's settings, read by pgnvme-etcd.service.
func etcdEnvFile(c Cluster, n EC2Node, v ec2View) string {
	var m etcdMember
	for _, e := range v.members() {
		if e.name == n.Name {
			m = e
		}
	}
	lines := []string{
		fmt.Sprintf("# etcd member %s of cluster %s, rendered by pgnvme; pgnvme-etcd.service reads it.", n.Name, c.Name),
		"# " + v.Scripts.Etcd + " sets ETCD_INITIAL_CLUSTER and ETCD_INITIAL_CLUSTER_STATE when the data directory is empty.",
		"ETCD_NAME=" + n.Name,
		"ETCD_DATA_DIR=" + n.Etcd.DataDir,
		"ETCD_LISTEN_PEER_URLS=" + m.peerURL,
		"ETCD_LISTEN_CLIENT_URLS=" + m.clientURL,
		"ETCD_INITIAL_ADVERTISE_PEER_URLS=" + m.peerURL,
		"ETCD_ADVERTISE_CLIENT_URLS=" + m.clientURL,
		"ETCD_INITIAL_CLUSTER=" + v.EtcdInitialCluster,
		"ETCD_INITIAL_CLUSTER_TOKEN=" + etcdToken(c),
		"ETCD_INITIAL_CLUSTER_STATE=new",
		// Patroni rewrites its keys every loop_wait; keep an hour of history.
		"ETCD_AUTO_COMPACTION_MODE=periodic",
		"ETCD_AUTO_COMPACTION_RETENTION=1",
	}
	if n.Architecture == ArchARM64 {
		// etcd 3.4 refuses to start on arm64 without it (3.5 supports arm64).
		lines = append(lines, "ETCD_UNSUPPORTED_ARCH=arm64")
	}
	return strings.Join(lines, "\n") + "\n"
}

// cloudConfig is the #cloud-config document: write_files with every file,
// runcmd with the install script.
func cloudConfig(c Cluster, n EC2Node, files []File, v ec2View) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#cloud-config\n")
	fmt.Fprintf(&b, "# pgnvme: node %s (%s, %s) of cluster %s, PostgreSQL %d, %d instance-store disk(s), %s.\n",
		n.Name, n.Zone, n.PrivateIP, c.Name, c.PostgresMajor, n.DiskCount, n.Architecture)
	fmt.Fprintf(&b, "# No secret here: the passwords are SSM SecureStrings under %s, read at boot.\n", n.SSM.Path)
	b.WriteString("write_files:\n")
	for _, f := range files {
		fmt.Fprintf(&b, "- path: %s\n", f.Path)
		fmt.Fprintf(&b, "  owner: %s\n", f.Owner)
		fmt.Fprintf(&b, "  permissions: '%04o'\n", f.Mode.Perm())
		writeYAMLContent(&b, f.Content)
	}
	b.WriteString("runcmd:\n")
	fmt.Fprintf(&b, "- [%s]\n", v.Scripts.Install)
	return b.String()
}

// writeYAMLContent writes a write_files content key: a literal block when
// the text allows it, else base64.
func writeYAMLContent(b *strings.Builder, s string) {
	if !literalBlockSafe(s) {
		b.WriteString("  encoding: b64\n")
		fmt.Fprintf(b, "  content: %s\n", base64.StdEncoding.EncodeToString([]byte(s)))
		return
	}
	body := strings.TrimRight(s, "\n")
	chomp := "" // exactly one final newline: clip
	switch trailing := len(s) - len(body); {
	case trailing == 0:
		chomp = "-"
	case trailing > 1:
		chomp = "+"
	}
	fmt.Fprintf(b, "  content: |%s\n", chomp)
	for _, line := range strings.Split(body, "\n") {
		if line == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	if chomp == "+" {
		b.WriteString(strings.Repeat("\n", len(s)-len(body)-1))
	}
}

// literalBlockSafe reports whether s reads back exactly from a YAML
// literal block: UTF-8, printable but for tabs and newlines, not starting
// with a space or an empty line, and no line with trailing white space.
func literalBlockSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) || s[0] == ' ' || s[0] == '\t' || s[0] == '\n' {
		return false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || r == 0xfeff || (r >= 0x80 && r < 0xa0)) {
			return false
		}
	}
	return !slices.ContainsFunc(strings.Split(s, "\n"), func(l string) bool {
		return strings.TrimRight(l, " \t") != l
	})
}

// problemf is a problem as bootstrap reports them: a sentence for the user, capitalised and ending in a
// full stop, like the rest of Validate's.
func problemf(format string, args ...any) error { return fmt.Errorf(format, args...) }
