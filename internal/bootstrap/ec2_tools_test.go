package bootstrap_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// needTool returns the path of a tool the test needs, or fails the test
// with the command that installs it.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed and is not on PATH: apt-get update && apt-get install -y %s (%v)", name, pkg, err)
	}
	return p
}

// TestRenderEC2_cloudInitSchema runs Debian's `cloud-init schema` on the
// user-data of every combination: 1 and 4 disks, WAL-G and pgBackRest,
// PostgreSQL 15 to 18, arm64 and x86_64. Each must be valid with nothing
// to report (no error, warning or deprecation).
func TestRenderEC2_cloudInitSchema(t *testing.T) {
	cloudInit := needTool(t, "cloud-init", "cloud-init")
	dir := t.TempDir()
	for _, combo := range ec2Matrix() {
		u, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		t.Run(combo.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(dir, combo.name+".yaml")
			if err := os.WriteFile(file, []byte(u.CloudConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(cloudInit, "schema", "--config-file", file).CombinedOutput()
			if got, want := strings.TrimSpace(string(out)), "Valid cloud-config: "+file; err != nil || got != want {
				t.Errorf("cloud-init schema: %v\n%s", err, out)
			}
		})
	}
}

// TestRenderEC2_yamlReadsBack parses every rendering of the matrix with
// PyYAML's safe_load, as cloud-init does, and checks that write_files holds
// each file exactly (path, owner, permissions, content) and that runcmd
// runs the install script and nothing else; and that Patroni's YAML parses.
func TestRenderEC2_yamlReadsBack(t *testing.T) {
	python := needTool(t, "python3", "python3-yaml")
	type file struct {
		Path, Owner, Permissions, Content string
	}
	type doc struct {
		CloudConfig string
		Files       []file
		Patroni     string
	}
	var docs []doc
	for _, combo := range append(ec2Matrix(), nonMemberCombo()) {
		u, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		d := doc{CloudConfig: u.CloudConfig, Patroni: u.PatroniYAML}
		for _, f := range u.Files {
			d.Files = append(d.Files, file{f.Path, f.Owner, fmt.Sprintf("%04o", f.Mode.Perm()), f.Content})
		}
		docs = append(docs, d)
	}
	in, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	const check = `
import json, sys, yaml
bad = 0
for i, d in enumerate(json.load(sys.stdin)):
    cc = yaml.safe_load(d["CloudConfig"])
    if sorted(cc) != ["runcmd", "write_files"]:
        print(i, "top-level keys", sorted(cc)); bad += 1
    if cc["runcmd"] != [["/usr/local/lib/pgnvme/install.sh"]]:
        print(i, "runcmd", cc["runcmd"]); bad += 1
    got = cc["write_files"]
    if len(got) != len(d["Files"]):
        print(i, "write_files has", len(got), "files, want", len(d["Files"])); bad += 1
    for g, w in zip(got, d["Files"]):
        if g.get("encoding") == "b64":
            import base64
            g["content"] = base64.b64decode(g["content"]).decode()
        for k, gk in (("Path", "path"), ("Owner", "owner"), ("Permissions", "permissions"), ("Content", "content")):
            if g.get(gk) != w[k]:
                print(i, w["Path"], k, "differs:", repr(g.get(gk))[:200], "want", repr(w[k])[:200]); bad += 1
    p = yaml.safe_load(d["Patroni"])
    if p["bootstrap"]["dcs"]["postgresql"]["parameters"]["hot_standby"] != "on" or p["postgresql"]["use_unix_socket"] is not True:
        print(i, "Patroni YAML reads back wrong"); bad += 1
sys.exit(1 if bad else 0)
`
	cmd := exec.Command(python, "-c", check)
	cmd.Stdin = bytes.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the rendered YAML does not read back as written (PyYAML, as cloud-init reads it): %v\n%s", err, out)
	}
}

// nonMemberCombo is the fifth node of five (no etcd member), preferred
// durability, a WAL-G mirror.
func nonMemberCombo() ec2Combo {
	c := ec2Cluster(walg, 18)
	c.Nodes = []string{"pg-a", "pg-b", "pg-c", "pg-d", "pg-e"}
	c.Synchronous.Number = 2
	c.Synchronous.DataDurability = bootstrap.DurabilityPreferred
	n := ec2Host(c, "pg-e", 2, bootstrap.ArchX86_64)
	n.WALG = bootstrap.WALGRelease{Version: "v3.0.9", URL: "https://mirror.example.internal/wal-g", SHA256: strings.Repeat("0", 64)}
	return ec2Combo{name: "5nodes_not_etcd", cluster: c, node: n}
}

// TestRenderEC2_shellcheck runs shellcheck on every script every rendering
// of the matrix writes (each distinct script once).
func TestRenderEC2_shellcheck(t *testing.T) {
	shellcheck := needTool(t, "shellcheck", "shellcheck")
	dir := t.TempDir()
	seen := map[[32]byte]bool{}
	var files []string
	for _, combo := range append(ec2Matrix(), nonMemberCombo()) {
		u, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		restore, err := bootstrap.RenderEC2Restore(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		clone, err := bootstrap.RenderEC2Clone(combo.cluster, combo.node, cloneSource(combo.cluster))
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		for _, f := range slices.Concat(u.Files, restore.Files, clone.Files) {
			if !f.Script() {
				continue
			}
			sum := sha256.Sum256([]byte(f.Content))
			if seen[sum] {
				continue
			}
			seen[sum] = true
			p := filepath.Join(dir, fmt.Sprintf("%s-%s", combo.name, filepath.Base(f.Path)))
			if err := os.WriteFile(p, []byte(f.Content), 0o600); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	if len(files) < 7 {
		t.Fatalf("only %d scripts rendered", len(files))
	}
	out, err := exec.Command(shellcheck, append([]string{"--shell=bash", "--severity=style", "--external-sources"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck on %d rendered scripts: %v\n%s", len(files), err, out)
	}
	t.Logf("shellcheck: %d distinct scripts clean", len(files))
}

// TestRenderEC2_systemdVerify runs systemd-analyze verify on the units of
// an etcd member and of a node without etcd, in a root made of this
// machine's systemd units, the rendered files and stand-ins for the
// programs the units run: no unknown key, bad value or missing unit.
func TestRenderEC2_systemdVerify(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	system := "/usr/lib/systemd/system"
	if _, err := os.Stat(filepath.Join(system, "sysinit.target")); err != nil {
		system = "/lib/systemd/system"
	}
	member := ec2Matrix()[len(ec2Matrix())-1]
	for _, combo := range []ec2Combo{member, nonMemberCombo()} {
		u, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		if out, err := exec.Command("cp", "-r", system, filepath.Join(root, "system")).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", system, err, out)
		}
		if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(root, "system"), filepath.Join(root, "usr/lib/systemd/system")); err != nil {
			t.Fatal(err)
		}
		var units []string
		for _, f := range u.Files {
			p := filepath.Join(root, f.Path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f.Content), f.Mode); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(f.Path, "/etc/systemd/system/") {
				units = append(units, p)
			}
		}
		for _, bin := range []string{"/usr/bin/systemctl", "/usr/bin/patroni", "/bin/kill"} {
			p := filepath.Join(root, bin)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command(analyze, append([]string{"verify", "--root=" + root, "--man=no", "--generators=no"}, units...)...).CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("%s: systemd-analyze verify %d units: %v\n%s", combo.name, len(units), err, out)
		}
	}
}
