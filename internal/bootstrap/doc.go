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
// # Patroni
//
// A node run by Patroni ([Node.Patroni]) gets no synchronous_standby_names,
// primary_conninfo or standby.signal from Render: Patroni's quorum mode
// owns them. Its other parameters reach Patroni through its YAML.
//
// # EC2 nodes
//
// [RenderEC2] renders the cloud-init user-data of one EC2 node ([EC2Node])
// of a cluster: a #cloud-config document that writes the node's scripts,
// systemd units and configuration files and runs the install script once
// per instance. On every boot, pgnvme-disks.service finds the instance-store
// NVMe as AWS's EKS AMI does (by-id links, resolved, de-duplicated), makes a
// RAID0 array of several disks (assembled again when the disks carry it,
// created when a stop/start has wiped them), XFS, and mounts it by UUID; the
// data directory is one level below the mount point and the database unit
// requires the mount. etcd (the first three nodes; data on the root volume)
// replaces its own member when it comes back with an empty data directory,
// and never adds a fourth; when two members are lost together, the survivor
// becomes a new one-member cluster with its data once the platform's
// takeover instruction (an SSM String parameter) names it at its exact WAL
// position (takeover.sh). Patroni 4 runs in quorum mode
// (synchronous_node_count from the synchronous block, strict for data
// durability "required", failsafe mode, pg_rewind, slots), with WAL-G or
// pgBackRest archiving and creating replicas. The passwords are SSM
// SecureStrings the node reads at boot: the user-data names them and holds
// no secret. The scripts are the files under ec2/, rendered with
// text/template.
//
// # Purity
//
// The package is pure: it imports only the standard library and pgnvme's
// other pure packages (quorum, capacity). It reads no files and runs nothing;
// the caller writes what [Render] returns and starts the processes.
package bootstrap
