package bootstrap

import (
	"bytes"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
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
	return renderEC2(c, n, false, nil)
}

// RenderEC2Form is RenderEC2 for the launch of every node of a new cluster at once (the create): etcd
// waits FormingEtcdJoinWaitSeconds for other members instead of the usual JoinWaitSeconds before it takes
// part in the cluster's first start. Its Identity is RenderEC2's: the wait matters only at the first
// start, so a node launched this way is current, not outdated, and a later replacement waits the usual
// time for the running members.
func RenderEC2Form(c Cluster, n EC2Node) (UserData, error) {
	return renderEC2Forming(c, n, false, nil)
}

// forming is n launched to form a new cluster: its etcd waits at most FormingEtcdJoinWaitSeconds for
// other members.
func forming(n EC2Node) EC2Node {
	if n.Etcd.JoinWaitSeconds == 0 || n.Etcd.JoinWaitSeconds > FormingEtcdJoinWaitSeconds {
		n.Etcd.JoinWaitSeconds = FormingEtcdJoinWaitSeconds
	}
	return n
}

// RenderEC2Restore is RenderEC2 for the launch of a cluster whose every member is lost and whose archive
// holds its data (c.Archive, required): Patroni bootstraps the new cluster from the archive's newest base
// backup to the end of the archive (the bootstrap method pgnvme_restore, see ec2/restore.sh) instead of
// initdb, and continues the same archive on the next timeline. Its Identity is RenderEC2's: the method
// matters only when the cluster bootstraps, so a node launched this way is current, not outdated.
func RenderEC2Restore(c Cluster, n EC2Node) (UserData, error) {
	if c.Archive == nil {
		return UserData{}, errors.New("a cluster without an archive has nothing to restore from")
	}
	return renderEC2Forming(c, n, true, nil)
}

// renderEC2Forming is renderEC2 for every node launched at once to form the cluster (forming), with the
// bootstrap from an archive when restore is set (src's, or c's own for nil), and with the Identity of the
// node's usual user-data: the etcd wait and the bootstrap method matter only when the cluster forms, so a
// node launched this way is current, not outdated.
func renderEC2Forming(c Cluster, n EC2Node, restore bool, src *Source) (UserData, error) {
	plain, err := renderEC2(c, n, false, nil)
	if err != nil {
		return UserData{}, err
	}
	u, err := renderEC2(c, forming(n), restore, src)
	if err != nil {
		return UserData{}, err
	}
	u.Identity = plain.Identity
	return u, nil
}

// nodeArchive is archive a as node n uses it: WAL-G reaches the server over its socket as the superuser
// and prefetches outside the data directory, and never writes over an archived segment; pgBackRest reads
// S3 with the instance role.
func nodeArchive(a Archive, walg bool, n EC2Node) *Archive {
	if walg {
		a.WALGEnv = maps.Clone(a.WALGEnv)
		// WAL-G reaches the server over its socket as the superuser
		// (peer authentication), and prefetches WAL outside the data
		// directory.
		a.WALGEnv["PGHOST"] = ec2SocketDir
		a.WALGEnv["PGPORT"] = strconv.Itoa(n.Port)
		a.WALGEnv["PGUSER"] = n.Patroni.Superuser
		a.WALGEnv["PGDATABASE"] = "postgres"
		a.WALGEnv["WALG_PREFETCH_DIR"] = walgPrefetchDir(n)
		// A push never writes over a segment already archived with other content: WAL-G then fails
		// the push (the segment stays in pg_wal) instead of destroying history; equal content is a
		// success, so a segment pushed twice (after a failover) is safe.
		a.WALGEnv[WALGPreventWALOverwrite] = "true"
		return &a
	}
	a.PgBackRestOptions = maps.Clone(a.PgBackRestOptions)
	if a.PgBackRestOptions["repo1-type"] == "s3" && a.PgBackRestOptions["repo1-s3-key-type"] == "" {
		// The instance role, never keys in user-data.
		a.PgBackRestOptions["repo1-s3-key-type"] = "auto"
	}
	return &a
}

func renderEC2(c Cluster, n EC2Node, restore bool, src *Source) (UserData, error) {
	if err := c.Validate(); err != nil {
		return UserData{}, err
	}
	n = n.WithDefaults(c)
	if err := c.validateEC2(n); err != nil {
		return UserData{}, err
	}

	view := newEC2View(c, n)
	view.Restore = restore
	ec := c
	if c.Archive != nil {
		ec.Archive = nodeArchive(*c.Archive, view.WALG, n)
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
	node.TLS = n.TLS
	r, err := Render(ec, node)
	if err != nil {
		return UserData{}, err
	}
	if n.TLS {
		for k, v := range ec2TLSParameters(view.TLSFiles) {
			if _, set := r.Parameters[k]; !set || k != "ssl_min_protocol_version" {
				r.Parameters[k] = v
			}
		}
	}
	var sourceFile File
	if src != nil {
		if view.Source, sourceFile, err = renderSource(c, n, ec, node, view, *src); err != nil {
			return UserData{}, err
		}
		view.PostgresReads = append(view.PostgresReads, sourceFile.Path)
		view.PostBootstrap = true // it records what the restore reached
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
		add(p, 0o755, compactShell(s, "internal/bootstrap/ec2/"+tmpl))
		return nil
	}
	unit := func(name string) error {
		s, err := execTemplate(name, view)
		if err != nil {
			return err
		}
		add(path.Join(ec2UnitDir, name), 0o644, compactUnit(s, "internal/bootstrap/ec2/"+name))
		return nil
	}
	var errs []error
	errs = append(errs,
		script(view.Scripts.Install, "install.sh"),
		script(view.Scripts.Disks, "disks.sh"),
		script(view.Scripts.Secrets, "secrets.sh"),
		script(view.Scripts.Backup, "backup.sh"))
	add(view.Scripts.BackupDecide, 0o755, backup.CompactDecideScript())
	if view.PostBootstrap {
		errs = append(errs, script(view.Scripts.PostBootstrap, "post-bootstrap.sh"))
	}
	if c.Archive != nil {
		errs = append(errs, script(view.Scripts.PrePromote, "pre-promote.sh"))
	}
	if view.Restore {
		errs = append(errs, script(view.Scripts.Restore, "restore.sh"))
	}
	if view.WALG {
		errs = append(errs,
			script(view.Scripts.WALGRestore, "walg-restore.sh"),
			script(view.Scripts.WALGReplica, "walg-replica.sh"))
	}
	if view.EtcdMember {
		errs = append(errs, script(view.Scripts.Etcd, "etcd.sh"), script(view.Scripts.Takeover, "takeover.sh"))
		add(view.EtcdEnvFile, 0o644, etcdEnvFile(c, n, view))
	}
	add(ec2PatroniConfig, 0o640, patroniYAML(dynamic))
	patroniFile := len(files) - 1
	if view.WALG {
		add(ec2WALGEnv, 0o640, r.WALGEnvFile)
	} else {
		add(ec2PgBackRestConf, 0o640, r.PgBackRestConf)
	}
	if view.Source != nil {
		files = append(files, sourceFile)
		add(view.Source.Plan, 0o644, src.Record+"\n")
	}
	for _, u := range []string{"pgnvme-disks.service", "pgnvme-secrets.service", "pgnvme-patroni.service",
		"pgnvme-backup.service", "pgnvme-backup.timer"} {
		errs = append(errs, unit(u))
	}
	if view.EtcdMember {
		errs = append(errs, unit("pgnvme-etcd.service"), unit("pgnvme-takeover.service"), unit("pgnvme-takeover.timer"))
	}
	if n.TLS {
		errs = append(errs, unit("pgnvme-tls-refresh.service"), unit("pgnvme-tls.timer"))
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
		return UserData{}, &UserDataSizeError{Node: n.Name, Bytes: size}
	}
	return u, nil
}

// renderSource is the source archive src of a restored cluster as node n (rendered as node, in ec) reads
// it: the view's part, and the source's settings file (pgBackRest's configuration or WAL-G's environment,
// beside the node's own) with its restore_command.
func renderSource(c Cluster, n EC2Node, ec Cluster, node Node, view ec2View, src Source) (*ec2Source, File, error) {
	sc, sn := ec, node
	sc.Archive = nodeArchive(src.Archive, view.WALG, n)
	sc.Archive.MaxBacklogMiB, sc.Archive.BackupOnCreate = 0, false
	sn.PgBackRestConfigPath, sn.WALGEnvPath = ec2PgBackRestSourceConf, ec2WALGSourceEnv
	r, err := Render(sc, sn)
	if err != nil {
		return nil, File{}, fmt.Errorf("restore source: %w", err)
	}
	out := &ec2Source{Stanza: sc.Archive.stanza(c), Backup: src.Backup, Plan: ec2RestorePlan, RecordPath: src.RecordPath,
		recovery: maps.Clone(src.Recovery)}
	f := File{Mode: 0o640, Owner: "root:root"}
	if view.WALG {
		out.Env, f.Path, f.Content = ec2WALGSourceEnv, ec2WALGSourceEnv, r.WALGEnvFile
		// The wrapper tells "not in the archive" from a failure, with the source's environment.
		out.restoreCommand = view.Scripts.WALGRestore + " %f %p " + ec2WALGSourceEnv
	} else {
		out.Conf, f.Path, f.Content = ec2PgBackRestSourceConf, ec2PgBackRestSourceConf, r.PgBackRestConf
		out.restoreCommand = r.Parameters["restore_command"]
	}
	return out, f, nil
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
	if n.TLS {
		// Clients (Patroni, etcdctl) and peers over TLS, each presenting a certificate of the cluster's CA.
		t := v.TLSFiles
		lines = append(lines,
			"ETCD_CERT_FILE="+t.Cert, "ETCD_KEY_FILE="+t.Key, "ETCD_TRUSTED_CA_FILE="+t.CA, "ETCD_CLIENT_CERT_AUTH=true",
			"ETCD_PEER_CERT_FILE="+t.Cert, "ETCD_PEER_KEY_FILE="+t.Key, "ETCD_PEER_TRUSTED_CA_FILE="+t.CA, "ETCD_PEER_CLIENT_CERT_AUTH=true")
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
