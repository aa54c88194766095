package nodesim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// PatroniToolsDir is where scripts/test-deps.sh unpacks Patroni 4 (Debian 13's package) with wrappers that
// run it on Debian 12's python3.
const PatroniToolsDir = "/opt/pgnvme-tools/patroni4"

// cloudConfig is the node's /etc/cloud/cloud.cfg: cloud-init with a NoCloud seed in place of EC2's
// metadata service, no network configuration (the simulator configures the namespace), and the modules
// pgnvme's user-data uses, in the stages Debian's default configuration runs them.
const cloudConfig = `# cloud-init of a pgnvme simulated node (internal/nodesim): the NoCloud seed in
# /var/lib/cloud/seed/nocloud stands for EC2's instance metadata and user-data.
datasource_list: [ NoCloud ]
network: {config: disabled}
preserve_hostname: true
manage_etc_hosts: false
users: []
cloud_init_modules: [write-files]
cloud_config_modules: [runcmd]
cloud_final_modules: [write-files-deferred, scripts-user]
system_info:
  distro: debian
  paths: {cloud_dir: /var/lib/cloud/, templates_dir: /etc/cloud/templates/}
`

// writeSimulatorFiles writes what the simulator provides in place of EC2 and of packages this machine
// does not have as packages, on every boot (each write is idempotent):
//
//   - /etc/hosts, /etc/hostname, /etc/resolv.conf: the node's name, the AWS endpoint's names (AWSHost and
//     the default SSM endpoints of the simulator's regions), no DNS;
//   - cloud-init's configuration and the NoCloud seed (instance ID, user-data);
//   - the endpoint's certificate in the system CA bundle;
//   - /usr/bin/systemctl, which talks to the unit runner;
//   - Patroni 4 and the AWS CLI on the PATH, at the paths their packages use.
//
// cloud-init runs the install script with PGNVME_INSTALL=check (see runCloudInit): it checks that these
// and this machine's other programs are there and installs nothing, for this machine reaches no package
// repository but Debian's, which has no Patroni 4.
func (n *Node) writeSimulatorFiles(boot int) error {
	write := func(p string, mode os.FileMode, content []byte) error {
		hp := n.hostPath(p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			return err
		}
		if old, err := os.ReadFile(hp); err == nil && bytes.Equal(old, content) {
			return os.Chmod(hp, mode)
		}
		if err := os.WriteFile(hp, content, mode); err != nil {
			return fmt.Errorf("writing %s on node %s: %w", p, n.Name, err)
		}
		return os.Chmod(hp, mode)
	}
	hosts := fmt.Sprintf("# pgnvme node simulator: node %s; the AWS endpoint is the service namespace.\n127.0.0.1\tlocalhost\n%s\t%s\n%s\t%s\n",
		n.Name, n.IP, n.Name, n.sim.ServiceIP, strings.Join(append([]string{AWSHost}, n.sim.ssmHosts()...), " "))
	files := []struct {
		path    string
		mode    os.FileMode
		content string
	}{
		{"/etc/hosts", 0o644, hosts},
		{"/etc/hostname", 0o644, n.Name + "\n"},
		{"/etc/resolv.conf", 0o644, "# pgnvme node simulator: no DNS server; names are in /etc/hosts.\n"},
		{"/etc/cloud/cloud.cfg", 0o644, cloudConfig},
		{"/var/lib/cloud/seed/nocloud/meta-data", 0o644, fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", n.InstanceID, n.Name)},
		{"/var/lib/cloud/seed/nocloud/user-data", 0o600, string(n.userData)},
		{"/usr/bin/systemctl", 0o755, systemctlShim},
	}
	for _, f := range files {
		if err := write(f.path, f.mode, []byte(f.content)); err != nil {
			return err
		}
	}
	// This machine's switch that keeps cloud-init from running at its own boot is not the image's.
	if err := os.Remove(n.hostPath("/etc/cloud/cloud-init.disabled")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Debian's cloud.cfg.d drop-ins would configure other datasources and modules.
	if entries, err := os.ReadDir(n.hostPath("/etc/cloud/cloud.cfg.d")); err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".cfg") {
				if err := os.Remove(n.hostPath("/etc/cloud/cloud.cfg.d/" + e.Name())); err != nil {
					return err
				}
			}
		}
	}

	// The endpoint's certificate in the system CA bundle (pgBackRest and, through AWS_CA_BUNDLE, the AWS
	// CLI read it).
	ca, err := os.ReadFile(n.sim.CAFile)
	if err != nil {
		return err
	}
	bundle, err := os.ReadFile(n.hostPath("/etc/ssl/certs/ca-certificates.crt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !bytes.Contains(bundle, ca) {
		if err := write("/etc/ssl/certs/ca-certificates.crt", 0o644, append(append(bundle, '\n'), ca...)); err != nil {
			return err
		}
	}

	// Patroni 4 where the patroni package puts its programs.
	for _, prog := range []string{"patroni", "patronictl"} {
		wrapper := filepath.Join(PatroniToolsDir, "bin", prog)
		if _, err := os.Stat(wrapper); err != nil {
			return fmt.Errorf("patroni 4 is not installed (no %s): run `bash scripts/test-deps.sh` as root", wrapper)
		}
		if err := write("/usr/bin/"+prog, 0o755, []byte(fmt.Sprintf("#!/bin/sh\n# Patroni 4 of the pgnvme node simulator.\nexec %s \"$@\"\n", wrapper))); err != nil {
			return err
		}
	}
	// The AWS CLI on the services' PATH, unless it is there already.
	if _, err1 := os.Stat("/usr/bin/aws"); err1 != nil {
		if _, err2 := os.Stat("/usr/local/bin/aws"); err2 != nil {
			aws, err := awsCLI()
			if err != nil {
				return err
			}
			if err := write("/usr/local/bin/aws", 0o755, []byte(fmt.Sprintf("#!/bin/sh\n# The AWS CLI of this machine, for the pgnvme node simulator.\nexec %s \"$@\"\n", aws))); err != nil {
				return err
			}
		}
	}
	return nil
}

// awsCLI is the AWS CLI program of this machine (through a pyenv shim, the program it runs).
func awsCLI() (string, error) {
	p, err := exec.LookPath("aws")
	if err != nil {
		return "", errors.New("the AWS CLI is needed (the node's secrets script reads SSM with it): pip install awscli, or apt-get install awscli")
	}
	if strings.Contains(p, "/shims/") {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "pyenv", "which", "aws").Output()
		if err != nil {
			return "", fmt.Errorf("%s is a pyenv shim and `pyenv which aws` failed: %w", p, err)
		}
		p = strings.TrimSpace(string(out))
	}
	if !path.IsAbs(p) {
		return filepath.Abs(p)
	}
	return p, nil
}
