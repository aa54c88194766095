package bootstrap

import (
	"maps"
	"net"
	"slices"
	"strconv"
)

// patroniDCSParameters are the parameters Patroni takes only from the DCS
// (the cluster-wide configuration in etcd) and passes to the postmaster on
// its command line; in a node's own configuration Patroni discards them.
// From Patroni's ConfigHandler.CMDLINE_OPTIONS (patroni/postgresql/config.py),
// without listen_addresses, port and cluster_name, which Patroni sets itself.
var patroniDCSParameters = []string{
	"hot_standby", "max_connections", "max_locks_per_transaction", "max_prepared_transactions",
	"max_replication_slots", "max_wal_senders", "max_worker_processes", "track_commit_timestamp",
	"wal_keep_segments", "wal_keep_size", "wal_level", "wal_log_hints",
}

// patroniRecoveryParameters are recovery settings, which Patroni takes
// from postgresql.recovery_conf and writes itself.
var patroniRecoveryParameters = []string{"restore_command", "archive_cleanup_command", "recovery_end_command"}

// patroniDoc is the Patroni configuration of node n (with defaults) in c,
// from r, the node's rendering in Patroni mode.
func patroniDoc(c Cluster, n EC2Node, r Rendered, view ec2View) yamlMap {
	dcsParams, localParams, recovery := yamlMap{}, yamlMap{}, yamlMap{}
	params := maps.Clone(r.Parameters)
	params["unix_socket_directories"] = ec2SocketDir
	if view.WALG {
		// The wrapper tells "not in the archive" from a failure.
		params["restore_command"] = view.Scripts.WALGRestore + " %f %p"
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch {
		case slices.Contains(patroniDCSParameters, k):
			dcsParams = append(dcsParams, yamlItem{k, params[k]})
		case slices.Contains(patroniRecoveryParameters, k):
			recovery = append(recovery, yamlItem{k, params[k]})
		default:
			localParams = append(localParams, yamlItem{k, params[k]})
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
	dcs = append(dcs,
		yamlItem{"failsafe_mode", true},
		yamlItem{"postgresql", yamlMap{
			{"use_pg_rewind", true},
			{"use_slots", true},
			{"parameters", dcsParams},
		}})

	var hosts []any
	for _, m := range view.members() {
		hosts = append(hosts, net.JoinHostPort(m.ip, strconv.Itoa(n.Etcd.ClientPort)))
	}
	hba := make([]any, len(r.HBA))
	for i, l := range r.HBA {
		hba[i] = l
	}

	pg := yamlMap{
		{"listen", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Port))},
		{"connect_address", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Port))},
		{"data_dir", n.DataDir},
		{"bin_dir", "/usr/lib/postgresql/" + strconv.Itoa(c.PostgresMajor) + "/bin"},
		{"pgpass", ec2PgPass},
		{"use_unix_socket", true},
		{"authentication", yamlMap{
			{"superuser", yamlMap{{"username", n.Patroni.Superuser}}},
			{"replication", yamlMap{{"username", n.Patroni.ReplicationUser}}},
		}},
		{"parameters", localParams},
		{"recovery_conf", recovery},
		{"pg_hba", hba},
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
		{"dcs", dcs},
		{"initdb", []any{yamlMap{{"encoding", "UTF8"}}, "data-checksums"}},
	}
	if view.PostBootstrap {
		// The stanza and the first backup (see post-bootstrap.sh).
		boot = append(boot, yamlItem{"post_bootstrap", view.Scripts.PostBootstrap})
	}

	return yamlMap{
		{"scope", c.Name},
		{"name", n.Name},
		{"restapi", yamlMap{
			{"listen", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Patroni.RESTAPIPort))},
			{"connect_address", net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.Patroni.RESTAPIPort))},
			// Unsafe endpoints (switchover, restart, config changes) need
			// this user; its password is PATRONI_RESTAPI_PASSWORD.
			{"authentication", yamlMap{{"username", n.Patroni.RESTAPIUser}}},
		}},
		{"etcd3", yamlMap{{"hosts", hosts}}},
		{"bootstrap", boot},
		{"postgresql", pg},
		{"tags", yamlMap{{"zone", n.Zone}}},
	}
}
