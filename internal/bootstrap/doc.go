// Package bootstrap renders one node's PostgreSQL configuration from a
// platform-neutral description of its cluster ([Cluster]) and of the node
// itself ([Node]): the server parameters (tuned, replication, synchronous
// quorum, archiving), pg_hba lines, a standby's primary_conninfo and
// standby.signal, and the archiver's configuration (a pgbackrest.conf or a
// WAL-G environment file).
//
// Both platforms of pgnvme_cluster use the same renderer: the local platform
// writes the result into data directories on this machine (through
// localnode), the EC2 platform will write it into cloud-init. Nothing here is
// specific to either; in particular the node's identity on its machine
// (listen_addresses, port, unix_socket_directories, logging) stays with the
// platform and is never rendered into [Rendered.Parameters].
//
// # What every node gets
//
// Every node of a cluster gets the same parameters except
// synchronous_standby_names, which each node renders from the names of the
// other nodes (a primary lists every standby). A standby ignores the setting
// while it is in recovery, so a standby that is promoted applies the right
// quorum at once, without a reload. archive_command and restore_command are
// on every node for the same reason.
//
// # Data durability
//
// [Synchronous] follows CloudNativePG's meanings. With
// DataDurability "required", a commit waits for Number standbys, always: with
// fewer standbys up, writes stop until they are back. With "preferred",
// [EffectiveSynchronousStandbyNames] lowers the number to the standbys that
// are healthy (to asynchronous replication when none is), so writes never
// stop; durability then rests on fewer copies until the standbys return.
//
// # Authentication
//
// pg_hba lines come from [Node.AllowedCIDRs]: scram-sha-256 for every
// network, trust for a loopback network (127.0.0.0/8, ::1). Trust on loopback
// is meant for the local platform only, where every node listens on loopback
// of one machine and any local user can reach every node anyway; never list a
// loopback network for a node that other users share. A node that trusts
// loopback also trusts its Unix socket; any other node authenticates socket
// connections with peer.
//
// # Purity
//
// The package is pure: it imports only the standard library and pgnvme's
// other pure packages (quorum, capacity). It reads no files and runs nothing;
// the caller writes what [Render] returns and starts the processes.
package bootstrap
