package ec2cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// fakeCloud is an in-memory Cloud for what moto cannot show: capacity errors, a REST API that does not
// answer, and which calls a decision makes.
type fakeCloud struct {
	mu        sync.Mutex
	calls     []string
	enis      []ENI
	instances []Instance
	runErr    error
}

func (f *fakeCloud) call(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeCloud) mutations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		for _, verb := range []string{"Create", "Put", "Run", "Terminate", "Delete", "Set"} {
			if strings.HasPrefix(c, verb) {
				out = append(out, c)
			}
		}
	}
	return out
}

var fakeZones = map[string]string{"eu-west-1a": "subnet-0aaaaaaaa", "eu-west-1b": "subnet-0bbbbbbbb", "eu-west-1c": "subnet-0cccccccc"}

func (f *fakeCloud) Subnets(_ context.Context, ids []string) ([]Subnet, error) {
	var out []Subnet
	for z, id := range fakeZones {
		out = append(out, Subnet{ID: id, Zone: z, VPCID: "vpc-0123456789", CIDR: "10.9.0.0/24"})
	}
	return out, nil
}
func (f *fakeCloud) VPCCIDR(context.Context, string) (string, error) { return "10.9.0.0/16", nil }
func (f *fakeCloud) Parameter(_ context.Context, name string) (string, error) {
	f.call("Parameter %s", name)
	return "", fmt.Errorf("parameter %s: %w", name, ErrNotFound)
}
func (f *fakeCloud) Image(_ context.Context, id string) (Image, error) {
	return Image{ID: id, Architecture: "x86_64", RootDeviceName: "/dev/xvda"}, nil
}
func (f *fakeCloud) PlacementGroupStrategy(_ context.Context, name string) (string, error) {
	switch name {
	case "racks":
		return "spread", nil
	case "one-rack":
		return "cluster", nil
	}
	return "", fmt.Errorf("placement group %s: %w", name, ErrNotFound)
}
func (f *fakeCloud) InstanceType(_ context.Context, name string) (TypeInfo, error) {
	return TypeInfo{Name: name, Architectures: []string{"x86_64"}, DiskCount: 1, NVMe: "required"}, nil
}
func (f *fakeCloud) TypeZones(context.Context, string) ([]string, error) {
	return []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}, nil
}
func (f *fakeCloud) ENIs(context.Context, string) ([]ENI, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ENI(nil), f.enis...), nil
}
func (f *fakeCloud) CreateENI(_ context.Context, subnetID string, groups []string, _ string, tags map[string]string) (ENI, error) {
	f.call("CreateENI %s", tags[awsspec.TagNode])
	f.mu.Lock()
	defer f.mu.Unlock()
	zone := ""
	for z, id := range fakeZones {
		if id == subnetID {
			zone = z
		}
	}
	e := ENI{ID: fmt.Sprintf("eni-%d", len(f.enis)+1), SubnetID: subnetID, Zone: zone, PrivateIP: fmt.Sprintf("10.9.0.%d", 10+len(f.enis)),
		Status: "available", Groups: groups, Tags: tags}
	f.enis = append(f.enis, e)
	return e, nil
}
func (f *fakeCloud) SetENISecurityGroups(_ context.Context, id string, _ []string) error {
	f.call("SetENISecurityGroups %s", id)
	return nil
}
func (f *fakeCloud) WaitENIAvailable(context.Context, string, time.Duration) error { return nil }
func (f *fakeCloud) DeleteENI(_ context.Context, id string) error {
	f.call("DeleteENI %s", id)
	return nil
}
func (f *fakeCloud) PublicIP(_ context.Context, id string, _ map[string]string) (string, error) {
	f.call("PublicIP %s", id)
	return "", errors.New("the fake cloud has no public addresses")
}
func (f *fakeCloud) ReleasePublicIPs(_ context.Context, _, node string) error {
	f.call("ReleasePublicIPs %s", node)
	return nil
}
func (f *fakeCloud) SecurityGroup(context.Context, string) (string, error) {
	return "sg-0123456789", nil
}
func (f *fakeCloud) CreateSecurityGroup(context.Context, string, string, []string, map[string]string) (string, error) {
	f.call("CreateSecurityGroup")
	return "sg-0123456789", nil
}
func (f *fakeCloud) DeleteSecurityGroup(_ context.Context, id string, _ time.Duration) error {
	f.call("DeleteSecurityGroup %s", id)
	return nil
}
func (f *fakeCloud) InstanceProfile(context.Context, string) (string, error) { return "pgnvme-t", nil }
func (f *fakeCloud) CreateInstanceProfile(context.Context, string, string, string, string, map[string]string) (string, error) {
	f.call("CreateInstanceProfile")
	return "pgnvme-t", nil
}
func (f *fakeCloud) DeleteInstanceProfile(context.Context, string) error {
	f.call("DeleteInstanceProfile")
	return nil
}
func (f *fakeCloud) PutSecret(_ context.Context, name, _ string, _ map[string]string) error {
	f.call("PutSecret %s", name)
	return nil
}
func (f *fakeCloud) StoreSecret(_ context.Context, name, _ string, _ map[string]string) error {
	f.call("StoreSecret %s", name)
	return nil
}
func (f *fakeCloud) Secret(_ context.Context, name string) (string, error) {
	if strings.HasPrefix(name, "/pgnvme-ca/") || strings.Contains(name, "/tls/") {
		return "", ErrNotFound // no cluster here has TLS
	}
	return "secret", nil
}
func (f *fakeCloud) ExistingParameters(ctx context.Context, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if _, err := f.Secret(ctx, n); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
func (f *fakeCloud) PutParameter(_ context.Context, name, _ string, _ map[string]string) error {
	f.call("PutParameter %s", name)
	return nil
}
func (f *fakeCloud) DeleteSecrets(context.Context, []string) error {
	f.call("DeleteSecrets")
	return nil
}
func (f *fakeCloud) LoadBalancer(context.Context, string) (LoadBalancer, error) {
	return LoadBalancer{}, ErrNotFound
}
func (f *fakeCloud) EnsureLoadBalancer(context.Context, string, []string, []string, bool, map[string]string) (LoadBalancer, error) {
	f.call("EnsureLoadBalancer")
	return LoadBalancer{DNSName: "pgnvme-t.elb.test"}, nil
}
func (f *fakeCloud) DeleteLoadBalancer(context.Context, string) error {
	f.call("DeleteLoadBalancer")
	return nil
}
func (f *fakeCloud) Instances(context.Context, string) ([]Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Instance(nil), f.instances...), nil
}
func (f *fakeCloud) RunInstance(_ context.Context, spec RunSpec) (string, error) {
	f.call("RunInstance %s placement group %q", spec.Tags[awsspec.TagNode], spec.Launch.PlacementGroup)
	if f.runErr != nil {
		return "", f.runErr
	}
	return "", errors.New("the fake launches nothing")
}
func (f *fakeCloud) WaitRunning(context.Context, string, time.Duration) (Instance, error) {
	return Instance{}, errors.New("the fake launches nothing")
}
func (f *fakeCloud) Terminate(_ context.Context, ids []string, _ time.Duration) error {
	f.call("Terminate %v", ids)
	return nil
}

var _ Cloud = (*fakeCloud)(nil)

// fakePlatform is a Platform on cloud whose REST calls all go to patroni (an httptest server on 127.0.0.1),
// whatever node address they name; nil patroni answers nothing (connection refused).
func fakePlatform(t *testing.T, cloud Cloud, patroni http.Handler) *Platform {
	t.Helper()
	target := "127.0.0.1:1" // nothing listens: refused at once
	if patroni != nil {
		srv := httptest.NewServer(patroni)
		t.Cleanup(srv.Close)
		target = srv.Listener.Addr().String()
	}
	pc := patroniclient.New(8008)
	pc.HTTP.Transport = &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, target)
	}}
	return &Platform{
		newCloud: func(context.Context, string) (Cloud, error) { return cloud, nil },
		region:   func(string) (string, error) { return "eu-west-1", nil },
		patroni:  pc,
		// The fake cloud has no bucket: every archive location is empty (the sim tests read moto's).
		archiveS3: func(context.Context, string) (awsclient.ArchiveReaderAPI, error) { return emptyBucket{}, nil },
		timeouts:  Timeouts{Launch: time.Second, Healthy: time.Second, Terminate: time.Second},
		poll:      10 * time.Millisecond,
		clock:     wait.Real,
	}
}

// launchedCurrent makes f's instances look launched with what p renders for s now (type, AMI, tags), so
// that nothing is outdated.
func launchedCurrent(t *testing.T, p *Platform, f *fakeCloud, s cluster.Spec) {
	t.Helper()
	ctx := context.Background()
	se, err := p.open(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := se.resolve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	for _, e := range f.enis {
		addrs[e.Tags[awsspec.TagNode]] = e.PrivateIP
	}
	_, launches, err := se.render(tg, addrs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.instances {
		in := &f.instances[i]
		l := launches[in.Tags[awsspec.TagNode]]
		in.Type, in.AMI, in.Tags = l.InstanceType, l.AMI, maps.Clone(in.Tags)
		maps.Copy(in.Tags, l.Tags())
	}
}

func fakeSpec(protect bool) cluster.Spec {
	return cluster.FromInput(cluster.Input{
		Name: "t", PostgresMajor: 15,
		Nodes:   []cluster.Node{{Name: "node-1", Zone: "eu-west-1a"}, {Name: "node-2", Zone: "eu-west-1b"}, {Name: "node-3", Zone: "eu-west-1c"}},
		Archive: &cluster.ArchiveInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b/p", "AWS_REGION": "eu-west-1"}},
		Blocks: []cluster.BlockInput{&awsspec.Input{Block: awsspec.Block{InstanceType: "m6id.large", AMIID: "ami-0123456789abcdef0", SubnetIDs: fakeZones},
			DeletionProtection: &protect}},
	})
}

// A launch EC2 has no capacity for is an error naming the type and the zone, and no other zone is tried.
func TestPlatform_insufficientCapacity(t *testing.T) {
	f := &fakeCloud{runErr: fmt.Errorf("launching: %w", ErrInsufficientCapacity)}
	_, err := fakePlatform(t, f, nil).Create(context.Background(), fakeSpec(true))
	if err == nil || !strings.Contains(err.Error(), "no capacity for m6id.large in zone eu-west-1a") || !strings.Contains(err.Error(), "does not move a node to another zone") {
		t.Fatalf("err = %v", err)
	}
	runs := 0
	for _, c := range f.mutations() {
		if strings.HasPrefix(c, "RunInstance") {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("%d launches after a capacity error; want 1 (no retry elsewhere): %v", runs, f.mutations())
	}
	for _, c := range f.mutations() {
		if strings.Contains(c, "LoadBalancer") {
			t.Errorf("a cluster without load_balancer called the load balancing API: %s", c)
		}
	}
}

// Destroy with deletion protection is refused at its attribute before any call.
func TestPlatform_deletionProtection(t *testing.T) {
	f := &fakeCloud{}
	err := fakePlatform(t, f, nil).Delete(context.Background(), fakeSpec(true), cluster.Prior{})
	fields, _ := cluster.FieldErrors(err)
	if len(fields) != 1 || strings.Join(fields[0].Path, ".") != "aws.deletion_protection" {
		t.Fatalf("err = %v", err)
	}
	if m := f.mutations(); len(m) != 0 {
		t.Errorf("a refused destroy changed things: %v", m)
	}
	if err := fakePlatform(t, f, nil).Delete(context.Background(), fakeSpec(false), cluster.Prior{}); err != nil {
		t.Fatal(err)
	}
}

// existing is a cluster of three nodes with their interfaces and instances; states by node.
func existing(f *fakeCloud, states map[string]string) []cluster.Member {
	var prior []cluster.Member
	for i, n := range []string{"node-1", "node-2", "node-3"} {
		zone := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}[i]
		tags := map[string]string{awsspec.TagCluster: "t", awsspec.TagNode: n}
		e := ENI{ID: fmt.Sprintf("eni-%d", i+1), Zone: zone, PrivateIP: fmt.Sprintf("10.9.0.%d", 10+i), Status: "in-use", Tags: tags}
		f.enis = append(f.enis, e)
		st := states[n]
		if st == "" {
			st = "running"
		}
		f.instances = append(f.instances, Instance{ID: fmt.Sprintf("i-%d", i+1), State: st, ENIID: e.ID, PrivateIP: e.PrivateIP, Zone: zone, Tags: tags, LaunchTime: time.Now()})
		role := cluster.RoleStandby
		if i == 0 {
			role = cluster.RolePrimary
		}
		prior = append(prior, cluster.Member{Name: n, Zone: zone, Role: role, State: cluster.StateRunning, Host: e.PrivateIP, Port: 5432})
	}
	return prior
}

// An unreachable REST API alone repairs nothing: the roles stay as last known, with a warning, and the plan
// waits for a leader (the apply cannot decide without one), launching and replacing nothing.
func TestPlatform_unreachableAPIPlansNothing(t *testing.T) {
	f := &fakeCloud{}
	prior := existing(f, nil)
	p := fakePlatform(t, f, nil)
	launchedCurrent(t, p, f, fakeSpec(true))
	st, err := p.Read(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range st.Members {
		if m.State != cluster.StateRunning || m.Role != prior[i].Role {
			t.Errorf("member %s: %s/%s; want running with its last role %s", m.Name, m.State, m.Role, prior[i].Role)
		}
	}
	if len(st.Warnings) == 0 || !strings.Contains(st.Warnings[0], "REST API could not be read") {
		t.Errorf("warnings %q", st.Warnings)
	}
	if st.Gone() {
		t.Error("the cluster reads as gone")
	}
	plan, err := p.Plan(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plan.Actions, "1. wait for a leader: no member is known to lead now (no node's Patroni REST API answered") || strings.Contains(plan.Actions, "\n2. ") {
		t.Errorf("an unreachable API should plan a wait for a leader, and nothing else:\n%s", plan.Actions)
	}
	if m := f.mutations(); len(m) != 0 {
		t.Errorf("read and plan changed things: %v", m)
	}
}

// A stopped instance is a lost node (its instance store is wiped): the plan replaces it alone.
func TestPlatform_stoppedInstanceIsLost(t *testing.T) {
	f := &fakeCloud{}
	prior := existing(f, map[string]string{"node-2": "stopped"})
	cl := map[string]any{"members": []map[string]any{
		{"name": "node-1", "role": "leader", "state": "running"},
		{"name": "node-3", "role": "quorum_standby", "state": "streaming", "lag": 0},
	}}
	p := fakePlatform(t, f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(cl)
	}))
	launchedCurrent(t, p, f, fakeSpec(true))
	st, err := p.Read(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
	if err != nil {
		t.Fatal(err)
	}
	if st.Members[1].State != cluster.StateMissing {
		t.Errorf("node-2 with a stopped instance is %s; want missing", st.Members[1].State)
	}
	plan, err := p.Plan(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.Actions, "replace node-2: its instance i-2 is stopped") || strings.Contains(plan.Actions, "replace node-1") || strings.Contains(plan.Actions, "replace node-3") {
		t.Errorf("plan actions:\n%s", plan.Actions)
	}
}

// A new cluster whose created role and profile would be another's (IAM names are global) is refused at
// plan, at its name, before anything is made.
func TestPlatform_profileOfAnotherRegion(t *testing.T) {
	f := &fakeCloud{} // its InstanceProfile finds pgnvme-t, and there is no interface of the cluster here
	_, err := fakePlatform(t, f, nil).Plan(context.Background(), fakeSpec(true), cluster.Prior{})
	fields, _ := cluster.FieldErrors(err)
	if len(fields) != 1 || strings.Join(fields[0].Path, ".") != "name" || fields[0].Summary != "Instance Profile Exists" {
		t.Fatalf("err = %v", err)
	}
	if m := f.mutations(); len(m) != 0 {
		t.Errorf("a refused plan changed things: %v", m)
	}
	s := fakeSpec(true)
	awsspec.Of(s).IAMInstanceProfile = "db-nodes"
	if _, err := fakePlatform(t, f, nil).Plan(context.Background(), s, cluster.Prior{}); err != nil {
		t.Errorf("with its own profile the cluster should plan: %v", err)
	}
}

// aws.placement_group: a spread group plans; one that does not exist, or a cluster group (one zone), is
// refused at plan at its attribute, before anything is made; the launch asks for the group.
func TestPlatform_placementGroup(t *testing.T) {
	for _, tc := range []struct{ group, summary string }{
		{"racks", ""}, {"missing", "Placement Group Not Found"}, {"one-rack", "Cluster Placement Group"},
	} {
		f := &fakeCloud{}
		s := fakeSpec(true)
		awsspec.Of(s).PlacementGroup, awsspec.Of(s).IAMInstanceProfile = tc.group, "db-nodes"
		_, err := fakePlatform(t, f, nil).Plan(context.Background(), s, cluster.Prior{})
		fields, _ := cluster.FieldErrors(err)
		switch {
		case tc.summary == "" && err != nil:
			t.Errorf("%s: %v", tc.group, err)
		case tc.summary != "" && (len(fields) != 1 || strings.Join(fields[0].Path, ".") != "aws.placement_group" || fields[0].Summary != tc.summary):
			t.Errorf("%s: err = %v; want %q at aws.placement_group", tc.group, err, tc.summary)
		}
		if m := f.mutations(); len(m) != 0 {
			t.Errorf("%s: a plan changed things: %v", tc.group, m)
		}
	}
	f := &fakeCloud{runErr: errors.New("stop after the first launch")}
	s := fakeSpec(true)
	awsspec.Of(s).PlacementGroup = "racks"
	_, _ = fakePlatform(t, f, nil).Create(context.Background(), s)
	if !slices.ContainsFunc(f.mutations(), func(c string) bool { return strings.Contains(c, "RunInstance") && strings.Contains(c, "racks") }) {
		t.Errorf("the launch did not ask for the placement group: %v", f.mutations())
	}
}

// A user-data over EC2's limit (only a rendering can tell) is refused at plan, at the parameters, before
// anything is made; the same cluster with small parameters plans.
func TestPlatform_userDataTooLarge(t *testing.T) {
	f := &fakeCloud{}
	s := fakeSpec(true)
	awsspec.Of(s).IAMInstanceProfile = "db-nodes"
	if _, err := fakePlatform(t, f, nil).Plan(context.Background(), s, cluster.Prior{}); err != nil {
		t.Fatalf("the cluster should plan: %v", err)
	}
	// 48 KiB that gzip cannot shrink: a SHA-256 chain in hex.
	var b strings.Builder
	sum := sha256.Sum256([]byte("pgnvme"))
	for b.Len() < 48<<10 {
		b.WriteString(hex.EncodeToString(sum[:]))
		sum = sha256.Sum256(sum[:])
	}
	s.Parameters = map[string]string{"pgnvme.padding": b.String()}
	_, err := fakePlatform(t, f, nil).Plan(context.Background(), s, cluster.Prior{})
	fields, _ := cluster.FieldErrors(err)
	if len(fields) != 1 || strings.Join(fields[0].Path, ".") != "parameters" || !strings.Contains(fields[0].Detail, "more than the 16384 bytes EC2 accepts") {
		t.Fatalf("err = %v; want the user-data's size at parameters", err)
	}
	if m := f.mutations(); len(m) != 0 {
		t.Errorf("a refused plan changed things: %v", m)
	}
}

// emptyBucket is an archive bucket that holds nothing.
type emptyBucket struct{}

func (emptyBucket) ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return &s3.ListObjectsV2Output{}, nil
}

func (emptyBucket) GetObjectLockConfiguration(context.Context, *s3.GetObjectLockConfigurationInput, ...func(*s3.Options)) (*s3.GetObjectLockConfigurationOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "ObjectLockConfigurationNotFoundError"}
}

func (emptyBucket) GetBucketLifecycleConfiguration(context.Context, *s3.GetBucketLifecycleConfigurationInput, ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "NoSuchLifecycleConfiguration"}
}

func (emptyBucket) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return nil, &s3types.NoSuchKey{Message: in.Key}
}

// A refresh takes the created security group from the nodes' interfaces and the profile from the running
// instances; when they do not agree (or say nothing) it looks them up by name instead.
func TestObservation_createdGroupAndProfile(t *testing.T) {
	arn := func(name string) string { return "arn:aws:iam::123456789012:instance-profile/pgnvme/" + name }
	cases := []struct {
		name           string
		enis           map[string]ENI
		instances      map[string]Instance
		group, profile string
	}{
		{"every node agrees", map[string]ENI{"node-1": {Groups: []string{"sg-1"}}, "node-2": {Groups: []string{"sg-1"}}},
			map[string]Instance{"node-1": {InstanceProfileARN: arn("pgnvme-t")}, "node-2": {InstanceProfileARN: arn("pgnvme-t")}}, "sg-1", "pgnvme-t"},
		{"an interface in two groups", map[string]ENI{"node-1": {Groups: []string{"sg-1", "sg-2"}}}, nil, "", ""},
		{"interfaces in different groups", map[string]ENI{"node-1": {Groups: []string{"sg-1"}}, "node-2": {Groups: []string{"sg-2"}}}, nil, "", ""},
		{"instances with different profiles", nil,
			map[string]Instance{"node-1": {InstanceProfileARN: arn("pgnvme-t")}, "node-2": {InstanceProfileARN: arn("other")}}, "", ""},
		{"an instance without a profile", nil, map[string]Instance{"node-1": {}}, "", ""},
	}
	for _, tc := range cases {
		o := observation{enis: tc.enis, instances: tc.instances}
		if g, p := o.createdGroup(), o.runningProfile(); g != tc.group || p != tc.profile {
			t.Errorf("%s: group %q, profile %q; want %q, %q", tc.name, g, p, tc.group, tc.profile)
		}
	}
}
