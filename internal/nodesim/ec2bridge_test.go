package nodesim_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

const bridgeRegion = "eu-west-1"

// bridgeUserData writes a file, and on the instance's first boot records the hostname and cloud-init's
// instance ID, and appends a line per run of runcmd (once per instance).
const bridgeUserData = `#cloud-config
write_files:
  - path: /var/tmp/bridge-hello
    content: "hello from moto's user-data\n"
runcmd:
  - [sh, -c, 'echo "$(hostname) $(cat /var/lib/cloud/data/instance-id)" >/var/tmp/bridge-id']
  - [sh, -c, 'echo ran >>/var/tmp/bridge-runs']
`

// TestEC2Bridge_lifecycle launches instances through moto's EC2 API as the EC2 platform does (an ENI per
// node, attached as device 0, gzip user-data) and checks that the bridge boots, stops, starts, removes and
// boots again what moto says: the VPC is the simulator's network cut per zone; the node has the ENI's
// address, moto's instance ID and the user-data's files; it resolves the region's default SSM endpoint to
// the AWS endpoint and reads a parameter through it with the AWS CLI, without --endpoint-url; its
// instance store is at /dev/disk/by-id; a stop/start gives it a new empty disk and keeps its root volume
// (runcmd does not run again); a termination removes it entirely, and a second instance with the same ENI
// boots at the same address with a fresh root volume.
func TestEC2Bridge_lifecycle(t *testing.T) {
	began := time.Now()
	s := newSim(t)
	ctx := context.Background()
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	vpcID, subnets, err := s.CreateVPC(ctx, bridgeRegion, zones)
	if err != nil {
		t.Fatal(err)
	}
	c := s.EC2Client(bridgeRegion)
	checkVPC(t, s, c, vpcID, subnets, zones)

	b, err := s.StartEC2Bridge(ctx, bridgeRegion)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)

	// The ENI in the subnet that holds the service address: EC2 (and the simulator's moto) gives it the
	// first address after the three reserved ones.
	eniID, ip := createENI(t, c, subnets["eu-west-1a"], "bridge-1")
	if want := s.Subnet.Addr().Next().Next().Next().Next(); ip != want {
		t.Fatalf("ENI address %s: want %s, the first after the subnet's reserved addresses (the service address %s among them)", ip, want, s.ServiceIP)
	}
	t.Logf("ENI %s at %s", eniID, ip)

	// First instance: booted at the ENI's address, as moto's instance.
	id1 := runInstance(t, c, eniID, "bridge-1", gzipped(t, bridgeUserData))
	waitEvent(t, s, b, id1, nodesim.EventBooted)
	n := b.Node(id1)
	if n == nil || n.Name != "bridge-1" || n.IP != ip || n.InstanceID != id1 || s.Node("bridge-1") != n {
		t.Fatalf("bridge node of %s: %+v; want bridge-1 at %s with instance ID %s", id1, n, ip, id1)
	}
	if got := exec(t, n, "cat", "/var/tmp/bridge-hello"); got != "hello from moto's user-data" {
		t.Errorf("/var/tmp/bridge-hello = %q", got)
	}
	if got, want := exec(t, n, "cat", "/var/tmp/bridge-id"), "bridge-1 "+id1; got != want {
		t.Errorf("/var/tmp/bridge-id = %q, want %q (hostname and cloud-init's instance ID)", got, want)
	}
	if got := exec(t, n, "ip", "-4", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(got, " "+ip.String()+"/") {
		t.Errorf("eth0 of the node: %q, want %s", got, ip)
	}
	for _, host := range []string{"ssm." + bridgeRegion + ".amazonaws.com", "ssm.us-east-1.amazonaws.com"} {
		if got := strings.Fields(exec(t, n, "getent", "hosts", host)); len(got) == 0 || got[0] != s.ServiceIP.String() {
			t.Errorf("getent hosts %s on the node: %q, want %s", host, got, s.ServiceIP)
		}
	}
	// The AWS CLI reads SSM at the region's default endpoint, as the secrets script does without
	// SSMEndpoint: TLS to the simulated endpoint, whose certificate names it.
	if err := s.PutSecureString(ctx, bridgeRegion, "/tf-acc-bridge/secret", "s3cret-value"); err != nil {
		t.Fatal(err)
	}
	ssmArgv := append(append([]string{"env"}, s.InstanceEnv()...),
		"aws", "ssm", "get-parameter", "--region", bridgeRegion, "--name", "/tf-acc-bridge/secret", "--with-decryption", "--query", "Parameter.Value", "--output", "text")
	if got := exec(t, n, ssmArgv...); got != "s3cret-value" {
		t.Errorf("aws ssm get-parameter on the node without --endpoint-url: %q, want s3cret-value", got)
	}
	// The instance store where udev would put its link (bootstrap.DefaultInstanceStoreGlob), and where
	// DiskGlob looks.
	link1 := diskLink(t, n)
	if got := exec(t, n, "sh", "-c", "ls /run/nodesim/disk/by-id/"); got != filepath.Base(link1) {
		t.Errorf("DiskGlob's directory holds %q, want %s", got, filepath.Base(link1))
	}
	if got := exec(t, n, "cat", "/var/tmp/bridge-runs"); got != "ran" {
		t.Errorf("/var/tmp/bridge-runs = %q, want one run", got)
	}

	// Stop and start: the node goes down, gets a new empty disk, and boots again as the same instance.
	if _, err := c.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{id1}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, b, id1, nodesim.EventStopped)
	if n.Running() {
		t.Fatal("the node of a stopped instance runs")
	}
	if _, err := c.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{id1}}); err != nil {
		t.Fatal(err)
	}
	waitEventAfter(t, s, b, id1, nodesim.EventBooted, nodesim.EventStopped)
	if b.Node(id1) != n {
		t.Fatal("a started instance got another node")
	}
	if link2 := diskLink(t, n); link2 == link1 {
		t.Errorf("after a stop/start the instance store is still %s, want a new disk", link1)
	}
	if got := exec(t, n, "cat", "/var/tmp/bridge-runs"); got != "ran" {
		t.Errorf("/var/tmp/bridge-runs after a stop/start = %q, want still one run (runcmd is once per instance)", got)
	}

	// Termination: the node goes entirely.
	nsPath := "/run/netns/nodesim-" + s.ID + "-bridge-1"
	if _, err := os.Stat(nsPath); err != nil {
		t.Fatalf("the node's namespace: %v", err)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id1}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, b, id1, nodesim.EventTerminated)
	if _, err := os.Stat(nsPath); !os.IsNotExist(err) {
		t.Errorf("the namespace of a terminated instance's node: %v, want it gone", err)
	}
	if _, err := os.Stat(n.Dir); !os.IsNotExist(err) {
		t.Errorf("the directory of a terminated instance's node: %v, want it gone", err)
	}
	if s.Node("bridge-1") != nil || b.Node(id1) != nil || n.Running() {
		t.Errorf("the node of a terminated instance is still there")
	}
	// As on EC2, the ENI is free for a replacement (the platform waits for that).
	if out, err := c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{eniID}}); err != nil ||
		len(out.NetworkInterfaces) != 1 || out.NetworkInterfaces[0].Status != types.NetworkInterfaceStatusAvailable || out.NetworkInterfaces[0].Attachment != nil {
		t.Errorf("ENI after the termination: %+v, %v; want it available", out, err)
	}

	// A replacement with the same ENI: the same name and address, a fresh root volume.
	id2 := runInstance(t, c, eniID, "bridge-1", gzipped(t, bridgeUserData))
	waitEvent(t, s, b, id2, nodesim.EventBooted)
	n2 := b.Node(id2)
	if n2 == nil || n2 == n || n2.IP != ip || n2.InstanceID != id2 {
		t.Fatalf("bridge node of the replacement %s: %+v; want a new node at %s", id2, n2, ip)
	}
	if got, want := exec(t, n2, "cat", "/var/tmp/bridge-id"), "bridge-1 "+id2; got != want {
		t.Errorf("/var/tmp/bridge-id on the replacement = %q, want %q", got, want)
	}
	if got := exec(t, n2, "cat", "/var/tmp/bridge-runs"); got != "ran" {
		t.Errorf("/var/tmp/bridge-runs on the replacement = %q, want one run on a fresh root volume", got)
	}

	// The event log in order.
	var got []string
	for _, e := range b.Events() {
		if e.Kind == nodesim.EventBootFailed {
			t.Errorf("event %s", e)
		}
		got = append(got, map[string]string{id1: "1", id2: "2"}[e.InstanceID]+":"+e.Kind)
	}
	want := []string{"1:boot", "1:booted", "1:stopped", "1:boot", "1:booted", "1:terminated", "2:boot", "2:booted"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want %v", got, want)
	}
	for _, e := range b.Events() {
		t.Logf("event %s", e)
	}
	t.Logf("lifecycle done in %.1f s", time.Since(began).Seconds())
}

// TestEC2Bridge_defaultUserData boots, through moto and the bridge, the user-data bootstrap.RenderEC2
// renders with the EC2 platform's defaults (no InstanceStoreGlob, no SSMEndpoint): the disk script finds
// the instance store at /dev/disk/by-id and mounts it, the secrets script reads SSM at the region's default
// endpoint, and PostgreSQL runs on the instance store under Patroni. A program run with Sim.Command
// reaches moto at MotoURL and the node.
func TestEC2Bridge_defaultUserData(t *testing.T) {
	began := time.Now()
	s := newSim(t)
	ctx := context.Background()
	region := bridgeRegion
	_, subnets, err := s.CreateVPC(ctx, region, []string{"eu-west-1a", "eu-west-1b"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.StartEC2Bridge(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	c := s.EC2Client(region)
	eniID, ip := createENI(t, c, subnets["eu-west-1b"], "pg-1")
	// pgBackRest's archive has its endpoint rendered (archive.Endpoint), as for any S3-compatible store.
	arch := archive.Spec{Bucket: "tf-acc-bridge", Prefix: "clusters/tf-acc-bridge", Region: region, Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}
	if err := s.CreateBucket(ctx, region, arch.Bucket); err != nil {
		t.Fatal(err)
	}

	spec := bootstrap.Cluster{
		Name: "tf-acc-bridge", PostgresMajor: 15, Nodes: []string{"pg-1"},
		Synchronous: bootstrap.Synchronous{Method: quorum.MethodAny, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOn},
		Parameters:  map[string]string{"shared_buffers": "64MB", "max_connections": "50"},
		Archive:     &bootstrap.Archive{PgBackRestOptions: arch.PgBackRestOptions()},
	}
	host := bootstrap.EC2Node{
		Name: "pg-1", Zone: "eu-west-1b", PrivateIP: ip.String(), InstanceType: "m6id.large", DiskCount: 1,
		Architecture: map[string]string{"amd64": bootstrap.ArchX86_64, "arm64": bootstrap.ArchARM64}[runtime.GOARCH],
		Region:       region, AllowedCIDRs: []string{s.Subnet.String()},
		Etcd:    bootstrap.Etcd{JoinWaitSeconds: 2},
		Patroni: bootstrap.Patroni{TTL: 20, LoopWait: 2, RetryTimeout: 4},
	}
	ud, err := bootstrap.RenderEC2(spec, host)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ud.CloudConfig, "--endpoint-url") || strings.Contains(ud.CloudConfig, "/run/nodesim") {
		t.Fatal("the rendered user-data names an SSM endpoint or the simulator's disk directory; want the defaults")
	}
	ssm := host.WithDefaults(spec).SSM
	for _, name := range []string{ssm.SuperuserPassword, ssm.ReplicationPassword, ssm.RESTAPIPassword} {
		if err := s.PutSecureString(ctx, region, name, "tf-acc-"+strings.ReplaceAll(name, "/", "-")); err != nil {
			t.Fatal(err)
		}
	}

	id := runInstance(t, c, eniID, "pg-1", ud.Gzip())
	waitEvent(t, s, b, id, nodesim.EventBooted)
	n := b.Node(id)
	waitUnit(t, n, "pgnvme-secrets.service", nodesim.StateActive)
	waitUnit(t, n, "pgnvme-disks.service", nodesim.StateActive)
	err = wait.Until(ctx, "PostgreSQL to run as the primary", 2*time.Minute, 250*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
		var p struct {
			Role  string `json:"role"`
			State string `json:"state"`
		}
		if err := getJSON(ctx, s, fmt.Sprintf("http://%s:8008/patroni", ip), &p); err != nil {
			return false, wait.NotYet(err)
		}
		if p.Role != "primary" || p.State != patroniapi.StateRunning {
			return false, wait.NotYet(fmt.Errorf("%s/%s", p.Role, p.State))
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(30))
	}
	if src := exec(t, n, "findmnt", "-n", "-o", "SOURCE", "--target", dataDir); src != n.Disks()[0] {
		t.Errorf("%s is on %s, want the instance store %s", dataDir, src, n.Disks()[0])
	}

	// A program in the service namespace (as terraform and the provider it spawns run there) reaches moto
	// at MotoURL and the nodes at their addresses, with the environment it is given.
	for _, argv := range [][]string{
		{"sh", "-c", `echo "$TF_ACC_BRIDGE"`},
		{"curl", "-sf", "-o", "/dev/null", "-w", "%{http_code}", s.MotoURL() + "/moto-api/data.json"},
		{"curl", "-sf", "-o", "/dev/null", "-w", "%{http_code}", fmt.Sprintf("http://%s:8008/patroni", ip)},
		{"terraform", "version"},
	} {
		cmd := s.Command(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "TF_ACC_BRIDGE=from the test", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s in the service namespace: %v: %s", strings.Join(argv, " "), err, out)
		}
		got := strings.TrimSpace(string(out))
		if want := map[string]string{"sh": "from the test", "curl": "200", "terraform": "Terraform v"}[argv[0]]; !strings.Contains(got, want) {
			t.Errorf("%s in the service namespace: %q, want %q", strings.Join(argv, " "), got, want)
		}
	}
	t.Logf("the default user-data ran PostgreSQL on the instance store after %.1f s", time.Since(began).Seconds())
}

// getJSON GETs url from the service namespace and decodes a 200 answer into v.
func getJSON(ctx context.Context, s *nodesim.Sim, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// checkVPC checks that the VPC is the simulator's network and its subnets its /26s in zone order.
func checkVPC(t *testing.T, s *nodesim.Sim, c *ec2.Client, vpcID string, subnets map[string]string, zones []string) {
	t.Helper()
	out, err := c.DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{VpcIds: []string{vpcID}})
	if err != nil || len(out.Vpcs) != 1 {
		t.Fatalf("DescribeVpcs %s: %+v, %v", vpcID, out, err)
	}
	if got := aws.ToString(out.Vpcs[0].CidrBlock); got != s.Subnet.String() {
		t.Errorf("VPC CIDR %s, want %s", got, s.Subnet)
	}
	if len(subnets) != len(zones) {
		t.Fatalf("subnets %v, want one per zone of %v", subnets, zones)
	}
	a := s.Subnet.Addr().As4()
	for i, z := range zones {
		a[3] = byte(64 * i)
		want := netip.PrefixFrom(netip.AddrFrom4(a), 26).String()
		if got := subnetCIDR(t, c, subnets[z]); got != want {
			t.Errorf("subnet of %s: %s, want %s", z, got, want)
		}
	}
}

func subnetCIDR(t *testing.T, c *ec2.Client, id string) string {
	t.Helper()
	out, err := c.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
	if err != nil || len(out.Subnets) != 1 {
		t.Fatalf("DescribeSubnets %s: %+v, %v", id, out, err)
	}
	return aws.ToString(out.Subnets[0].CidrBlock)
}

// runInstance launches one instance as the EC2 platform does: the node's ENI as device 0, gzip user-data,
// the pgnvme tags.
func runInstance(t *testing.T, c *ec2.Client, eniID, node string, userData []byte) string {
	t.Helper()
	ctx := context.Background()
	images, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("DescribeImages: %+v, %v", images, err)
	}
	out, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId:      images.Images[0].ImageId,
		InstanceType: types.InstanceTypeM6idLarge,
		MinCount:     aws.Int32(1),
		MaxCount:     aws.Int32(1),
		NetworkInterfaces: []types.InstanceNetworkInterfaceSpecification{
			{DeviceIndex: aws.Int32(0), NetworkInterfaceId: aws.String(eniID)},
		},
		UserData: aws.String(base64.StdEncoding.EncodeToString(userData)),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{
			{Key: aws.String("pgnvme:node"), Value: aws.String(node)}, {Key: aws.String("pgnvme:cluster"), Value: aws.String("tf-acc-bridge")},
		}}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("RunInstances: %+v, %v", out, err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	t.Logf("launched %s", id)
	return id
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// createENI creates node's network interface in subnet as the EC2 platform does, and returns its ID and
// address.
func createENI(t *testing.T, c *ec2.Client, subnet, node string) (string, netip.Addr) {
	t.Helper()
	eni, err := c.CreateNetworkInterface(context.Background(), &ec2.CreateNetworkInterfaceInput{
		SubnetId:    aws.String(subnet),
		Description: aws.String("tf-acc node " + node),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: []types.Tag{
			{Key: aws.String("pgnvme:node"), Value: aws.String(node)}, {Key: aws.String("pgnvme:cluster"), Value: aws.String("tf-acc-bridge")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(aws.ToString(eni.NetworkInterface.PrivateIpAddress))
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(eni.NetworkInterface.NetworkInterfaceId), ip
}

// waitEvent waits until the bridge logged an event of kind for instance id, and fails the test at a
// failed boot.
func waitEvent(t *testing.T, s *nodesim.Sim, b *nodesim.EC2Bridge, id, kind string) {
	t.Helper()
	waitEventAfter(t, s, b, id, kind, "")
}

// waitEventAfter waits for an event of kind for id after the last one of kind after (none: from the
// start).
func waitEventAfter(t *testing.T, s *nodesim.Sim, b *nodesim.EC2Bridge, id, kind, after string) {
	t.Helper()
	err := wait.Until(context.Background(), fmt.Sprintf("the bridge's %s event of %s", kind, id), 2*time.Minute, 100*time.Millisecond, nil, func(context.Context) (bool, error) {
		events := b.Events()
		from := 0
		for i, e := range events {
			if after != "" && e.InstanceID == id && e.Kind == after {
				from = i + 1
			}
		}
		for _, e := range events[from:] {
			if e.InstanceID != id {
				continue
			}
			if e.Kind == nodesim.EventBootFailed {
				return false, fmt.Errorf("boot failed: %s", e.Detail)
			}
			if e.Kind == kind {
				return true, nil
			}
		}
		return false, wait.NotYet(fmt.Errorf("events %v", events))
	})
	if err != nil {
		logs := ""
		if n := b.Node(id); n != nil {
			logs = n.Logs(30)
		}
		t.Fatalf("%v\n%s", err, logs)
	}
}

// diskLink is the node's one instance-store link in /dev/disk/by-id, checked to lead to its loop device.
func diskLink(t *testing.T, n *nodesim.Node) string {
	t.Helper()
	links := strings.Fields(exec(t, n, "sh", "-c", "ls -d /dev/disk/by-id/*NVMe_Instance_Storage_*"))
	if len(links) != 1 {
		t.Fatalf("/dev/disk/by-id on the node: %v, want one instance-store link", links)
	}
	dev := exec(t, n, "readlink", "-f", links[0])
	if disks := n.Disks(); len(disks) != 1 || dev != disks[0] {
		t.Fatalf("%s leads to %s, want the node's disk %v", links[0], dev, disks)
	}
	exec(t, n, "test", "-b", dev)
	return links[0]
}
