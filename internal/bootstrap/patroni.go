package bootstrap

import (
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
)

// patroniRecoveryParameters are recovery settings, which Patroni takes
// from postgresql.recovery_conf and writes itself.
var patroniRecoveryParameters = []string{"restore_command", "archive_cleanup_command", "recovery_end_command"}

// patroniLocalParameters are the parameters that stay in the node's own
// configuration: those tied to the files the user-data writes (the socket
// directory, the archiver and its settings), which change only with the
// user-data, that is with a new instance. Every other parameter is the
// cluster's and goes to the DCS, where Patroni's dynamic configuration
// (PATCH /config) changes it on every node: a node's own configuration would
// override the DCS, and Patroni takes some parameters (max_connections,
// wal_level, ...) only from the DCS.
var patroniLocalParameters = []string{"unix_socket_directories", "archive_mode", "archive_command",
	"ssl", "ssl_cert_file", "ssl_key_file", "ssl_ca_file"}

// patroniDoc is the Patroni configuration of node n (with defaults) in c,
// from r, the node's rendering in Patroni mode. dynamic is the DCS part
// (bootstrap.dcs): the given one, or nil for the cluster's DynamicConfig.
func patroniDoc(c Cluster, n EC2Node, r Rendered, view ec2View, dynamic yamlMap) yamlMap {
	localParams, recovery := yamlMap{}, yamlMap{}
	params := maps.Clone(r.Parameters)
	params["unix_socket_directories"] = ec2SocketDir
	if view.WALG {
		// The wrapper tells "not in the archive" from a failure.
		params["restore_command"] = view.Scripts.WALGRestore + " %f %p"
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch {
		case slices.Contains(patroniLocalParameters, k):
			localParams = append(localParams, yamlItem{k, params[k]})
		case slices.Contains(patroniRecoveryParameters, k):
			recovery = append(recovery, yamlItem{k, params[k]})
		}
	}
	if dynamic == nil {
		dynamic = patroniDynamic(c, n, r)
	}
	var hosts []any
	for _, m := range view.members() {
		hosts = append(hosts, net.JoinHostPort(m.ip, strconv.Itoa(n.Etcd.ClientPort)))
	}
	pg := yamlMap{
		{"listen", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Port))},
		{"connect_address", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Port))},
		{"data_dir", n.DataDir},
		{"bin_dir", "/usr/lib/postgresql/" + strconv.Itoa(c.PostgresMajor) + "/bin"},
		{"pgpass", ec2PgPass},
		{"use_unix_socket", true},
		{"authentication", patroniAuthentication(n, view)},
		{"parameters", localParams},
		{"recovery_conf", recovery},
	}
	if c.Archive != nil {
		// Before a promotion: the WAL this standby received, to its own archiver (see pre-promote.sh).
		pg = append(pg, yamlItem{"pre_promote", view.Scripts.PrePromote})
	}
	basebackup := yamlMap{{"checkpoint", "fast"}}
	if view.WALG {
		pg = append(pg,
			yamlItem{"create_replica_methods", []any{"wal_g", "basebackup"}},
			// The latest base backup from the archive, even when no leader
			// runs; pg_basebackup from a member when that fails.
			yamlItem{"wal_g", yamlMap{{"command", view.Scripts.WALGReplica}, {"no_params", true}, {"no_leader", true}}},
			yamlItem{"basebackup", basebackup})
	} else {
		pg = append(pg,
			yamlItem{"create_replica_methods", []any{"pgbackrest", "basebackup"}},
			// pgBackRest's documented Patroni method: a delta restore into
			// the kept data directory.
			yamlItem{"pgbackrest", yamlMap{
				{"command", ec2PgBackRestBin + " --config=" + ec2PgBackRestConf + " --stanza=" + c.Archive.stanza(c) + " --delta restore"},
				{"keep_data", true}, {"no_params", true},
			}},
			yamlItem{"basebackup", basebackup})
	}

	boot := yamlMap{
		{"dcs", dynamic},
		{"initdb", []any{yamlMap{{"encoding", "UTF8"}}, "data-checksums"}},
	}
	if view.Restore {
		// Every member was lost: the new cluster is the archive's (see restore.sh), recovered with the
		// node's own restore_command to the end of the archive, on the latest timeline. Or the cluster
		// is created from another archive (the restore block), to a target.
		rc := slices.Clone(recovery)
		if src := view.Source; src != nil {
			// Restored from another archive: its WAL, to the target, where PostgreSQL promotes.
			rc = yamlMap{{"restore_command", src.restoreCommand}}
			for _, k := range slices.Sorted(maps.Keys(src.recovery)) {
				rc = append(rc, yamlItem{k, src.recovery[k]})
			}
			if len(src.recovery) > 0 {
				rc = append(rc, yamlItem{"recovery_target_action", "promote"})
			}
		}
		rc = append(rc, yamlItem{"recovery_target_timeline", "latest"})
		boot = append(yamlMap{
			{"method", "pgnvme_restore"},
			{"pgnvme_restore", yamlMap{{"command", view.Scripts.Restore}, {"no_params", true}, {"recovery_conf", rc}}},
		}, boot...)
	}
	if view.PostBootstrap {
		// The stanza and the first backup (see post-bootstrap.sh).
		boot = append(boot, yamlItem{"post_bootstrap", view.Scripts.PostBootstrap})
	}

	restapi := yamlMap{
		{"listen", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Patroni.RESTAPIPort))},
		{"connect_address", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Patroni.RESTAPIPort))},
		// Unsafe endpoints (switchover, restart, config changes) need
		// this user; its password is PATRONI_RESTAPI_PASSWORD.
		{"authentication", yamlMap{{"username", n.Patroni.RESTAPIUser}}},
	}
	etcd := yamlMap{{"hosts", hosts}}
	doc := yamlMap{{"scope", c.Name}, {"name", n.Name}}
	if t := view.TLSFiles; n.TLS {
		// https only (Patroni serves one or the other); a SIGHUP reloads a renewed certificate.
		restapi = append(restapi, yamlItem{"certfile", t.Cert}, yamlItem{"keyfile", t.Key})
		etcd = append(yamlMap{{"protocol", "https"}, {"cacert", t.CA}, {"cert", t.Cert}, {"key", t.Key}}, etcd...)
		// patronictl on the node verifies the REST API against the cluster's CA.
		doc = append(doc, yamlItem{"ctl", yamlMap{{"cacert", t.CA}}})
	}
	return append(doc,
		yamlItem{"restapi", restapi},
		yamlItem{"etcd3", etcd},
		yamlItem{"bootstrap", boot},
		yamlItem{"postgresql", pg},
		yamlItem{"tags", yamlMap{{"zone", n.Zone}}},
	)
}

// patroniAuthentication is postgresql.authentication: the users' names (their passwords come from the
// environment); with TLS, replication authenticates by its client certificate and verifies the primary's
// (verify-full), and the superuser's connections to other members (pg_rewind) verify them.
func patroniAuthentication(n EC2Node, view ec2View) yamlMap {
	superuser := yamlMap{{"username", n.Patroni.Superuser}}
	replication := yamlMap{{"username", n.Patroni.ReplicationUser}}
	if t := view.TLSFiles; n.TLS {
		superuser = append(superuser, yamlItem{"sslmode", "verify-full"}, yamlItem{"sslrootcert", t.CA})
		replication = append(replication, yamlItem{"sslmode", "verify-full"}, yamlItem{"sslrootcert", t.CA},
			yamlItem{"sslcert", t.ReplicationCert}, yamlItem{"sslkey", t.Key})
	}
	return yamlMap{{"superuser", superuser}, {"replication", replication}}
}

// patroniDynamic is the cluster's dynamic configuration, which Patroni keeps
// in the DCS: its timings, quorum mode, every cluster-wide parameter and
// pg_hba. The
// same for every node of c (it is taken from n's Patroni settings, which are
// the cluster's).
func patroniDynamic(c Cluster, n EC2Node, r Rendered) yamlMap {
	params := yamlMap{}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		if !slices.Contains(patroniLocalParameters, k) && !slices.Contains(patroniRecoveryParameters, k) {
			params = append(params, yamlItem{k, r.Parameters[k]})
		}
	}
	s := c.Synchronous
	dcs := yamlMap{
		{"ttl", n.Patroni.TTL},
		{"loop_wait", n.Patroni.LoopWait},
		{"retry_timeout", n.Patroni.RetryTimeout},
		{"maximum_lag_on_failover", n.Patroni.MaximumLagOnFailover},
	}
	if s.Number > 0 {
		dcs = append(dcs,
			yamlItem{"synchronous_mode", "quorum"},
			yamlItem{"synchronous_node_count", s.Number},
			// required: with too few standbys, commits wait; preferred:
			// Patroni lowers the quorum to the standbys there are.
			yamlItem{"synchronous_mode_strict", s.DataDurability == DurabilityRequired})
	} else {
		dcs = append(dcs, yamlItem{"synchronous_mode", false})
	}
	hba := make([]any, len(r.HBA))
	for i, l := range r.HBA {
		hba[i] = l
	}
	return append(dcs,
		yamlItem{"failsafe_mode", true},
		yamlItem{"postgresql", yamlMap{
			{"use_pg_rewind", true},
			{"use_slots", true},
			{"parameters", params},
			// In the DCS, so that a node added to the cluster (its address among
			// the allowed networks) changes no other node's user-data.
			{"pg_hba", hba},
		}.with(backupPolicy(c))})
}

// backupPolicy is the archive's backup policy for postgresql.pgnvme_backup (backup.DynamicConfigKey), none
// without an archive. Not Patroni's own setting: Patroni keeps it with the rest (at bootstrap it keeps only
// its own top-level keys, but every key under postgresql), and the node's backup.sh reads it.
func backupPolicy(c Cluster) yamlMap {
	if c.Archive == nil {
		return nil
	}
	policy := c.Archive.BackupPolicy().DynamicConfig()
	b := yamlMap{}
	for _, k := range slices.Sorted(maps.Keys(policy)) {
		b = append(b, yamlItem{k, policy[k]})
	}
	return yamlMap{{backup.DynamicConfigKey, b}}
}
