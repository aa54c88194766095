// Package nodesim boots EC2 nodes of pgnvme from their rendered cloud-init user-data on this machine, for
// tests and for people without an AWS account (`make nodesim`). A simulated node is as close to an EC2
// instance as one Linux machine without systemd allows:
//
//   - Network: one network namespace per node with its own address in 198.18.0.0/15 (the benchmarking
//     range, RFC 2544; never any other), on a bridge that lives in the simulator's service namespace, which
//     also holds the simulated AWS endpoint. Nothing gets an address or a link in the root namespace: the
//     root namespace reaches the nodes through [Sim.DialContext], which opens its sockets inside the service
//     namespace, and [Sim.Command] runs client programs there (terraform and the provider it spawns: they
//     reach moto at [Sim.MotoURL] and the nodes at their addresses). The namespaces have no default route,
//     so a node can reach only its peers and the service address.
//   - Machine: per node a mount, UTS and IPC namespace and a cgroup (v2) that holds every process the node
//     runs. /etc, /usr and /var are overlays of this machine's with a per-node upper layer (the node's root
//     volume: it survives a stop/start); /run, /tmp and /dev/shm are fresh tmpfs on every boot. Every path
//     the user-data uses is thus the real one, and what a node writes stays its own.
//   - Instance store: a loop device per disk, linked as nvme-Amazon_EC2_NVMe_Instance_Storage_AWS<serial>
//     in a per-node by-id directory, which the node sees at /dev/disk/by-id as udev makes it on EC2: the
//     node has a /dev of its own (a tmpfs with this machine's device nodes, made when it boots; a disk
//     attached later gets its node there), so nothing is made in this machine's /dev. The default
//     EC2Node.InstanceStoreGlob (bootstrap.DefaultInstanceStoreGlob) thus finds the disks, as does
//     [DiskGlob], the same directory under /run/nodesim; the rendered disk script finds, formats and mounts
//     the disk itself.
//   - cloud-init: Debian 12's real cloud-init runs the user-data (gzip, as EC2 gets it) from a NoCloud seed,
//     with the modules pgnvme's user-data uses (write_files, runcmd): write_files and the install script
//     once per instance, as on EC2, and nothing again on a later boot of the same instance.
//   - systemd: a small unit runner (manager.go) reads the rendered units and runs them in the node's
//     namespaces, each unit in a cgroup of its own: Requires=/Wants=/After=/Before=, RequiresMountsFor=
//     (on the mount units that exist), AssertPathIsMountPoint=, Type=oneshot/simple/notify (with a real
//     NOTIFY_SOCKET), RemainAfterExit=, ExecStartPre/ExecStart/ExecStartPost, User=/Group=, Environment=,
//     EnvironmentFile=, Restart= with RestartSec=, KillMode=, TimeoutStartSec=/TimeoutStopSec=, and .mount
//     units (a file system mounted by hand or gone is seen as such, as systemd follows the mount table;
//     What=/dev/disk/by-uuid/UUID is mounted as UUID=, there being no udev). /run/systemd/system exists,
//     so the disk script takes its systemd path (a mount unit for each boot's UUID). The node's
//     /usr/bin/systemctl talks to the runner (start, stop, restart, reload (ExecReload= with MAINPID), kill, enable, disable, mask, unmask,
//     daemon-reload, is-active, is-failed, is-enabled, status). Enabled units start on every boot; the
//     simulated image enables none of its own. A timer fires at its OnCalendar= elapses (UTC, the
//     expressions internal/backup parses) and starts its service (Unit=, else its own name); other timer
//     settings are ignored.
//   - AWS: moto behind stunnel (TLS, a certificate the nodes' CA store trusts) in the service namespace, as
//     https://aws.nodesim.test: S3 for pgBackRest, SSM for the passwords. The instance role is the
//     environment every unit gets ([Sim.InstanceEnv]): test credentials, the CA bundle, and for pgBackRest
//     repo1-s3-key-type=shared with those credentials (the rendered key type "auto" asks the instance
//     metadata service, whose address is outside what a test may reach). The endpoint itself is rendered
//     (the archive's repo1-s3-endpoint, EC2Node.SSMEndpoint for the secrets script), or, for SSM, left to
//     the AWS CLI: each node's /etc/hosts sends ssm.REGION.amazonaws.com to the service address for
//     eu-west-1, us-east-1 and every region given to [Sim.CreateVPC], [Sim.StartEC2Bridge] or
//     [Sim.AddRegion], and the endpoint's certificate names the SSM endpoints of every commercial region.
//     Only the nodes resolve these names so; nothing changes this machine's resolution. moto runs with two
//     changes that make its network interfaces behave as EC2's (see motoServer): an interface created
//     without an address gets the subnet's next free one (moto picks a random one, reserved addresses
//     included), and a terminated instance leaves its interface available for a replacement.
//   - Packages: cloud-init runs the install script with PGNVME_INSTALL=check, so it installs nothing and
//     checks that this machine's programs are there. Two are not installed here as Debian packages:
//     Patroni 4 (scripts/test-deps.sh unpacks it under /opt) and the AWS CLI (pip); the simulator puts
//     their programs at the paths the packages would (see writeSimulatorFiles).
//
// A stop/start of a node ([Node.StopStart]) kills every process of the node (cgroup.kill), replaces its
// loop devices with empty ones, and boots it again from the same user-data. [Sim.RemoveNode] removes a
// node entirely (a termination): its name and address are free again afterwards.
//
// Nodes come either by hand ([Sim.AddNode], [Sim.NewCluster]) or from moto's EC2 API, as the EC2 platform
// launches them, through the EC2 bridge:
//
//   - [Sim.CreateVPC] creates a VPC in moto whose CIDR is the simulator's network, with a subnet per zone
//     (the network cut in equal power-of-two parts). An ENI created in one of them has a node address;
//     none is ever the service address (the subnets' first three host addresses are reserved).
//   - [Sim.StartEC2Bridge] polls moto's instances tagged pgnvme:node about once a second: a running one
//     gets a node (named by the tag, at the address of its device-0 ENI, booted from its user-data with
//     moto's instance ID as cloud-init's, one instance-store disk); a stopped one is killed and gets empty
//     disks, and boots again when it runs again; a terminated one is removed, so that a replacement on the
//     same ENI boots at the same address. [EC2Bridge.Events] is what it did, in order.
//
// Everything the simulator creates carries a random per-run suffix and is removed by name or PID by
// [Sim.Close]: namespaces (and with them the bridge and veths), cgroups, loop devices, the per-run
// directory. Mounts live in the nodes' mount namespaces and go with them.
package nodesim
