package ec2cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Timeouts bound the platform's waits.
type Timeouts struct {
	// Launch is how long an instance may take to run; Healthy how long the cluster may take to have a
	// leader and every standby streaming in the quorum (after a create, a replacement or a switchover);
	// Terminate how long instances may take to terminate and their interfaces to come free.
	Launch, Healthy, Terminate time.Duration
}

// DefaultTimeouts are the platform's waits on AWS.
var DefaultTimeouts = Timeouts{Launch: 10 * time.Minute, Healthy: 20 * time.Minute, Terminate: 10 * time.Minute}

// Platform is the EC2 platform of pgnvme_cluster (it implements the provider's ClusterPlatform).
type Platform struct {
	newCloud func(ctx context.Context, region string) (Cloud, error)
	region   func(explicit string) (string, error)
	patroni  Patroni
	// patroniTLS is the Patroni client for nodes whose REST API serves https with a certificate of roots.
	patroniTLS func(roots *x509.CertPool) Patroni
	// archiveS3 is the S3 client that reads a cluster's archive in region, with the provider's credentials.
	archiveS3 func(ctx context.Context, region string) (awsclient.ArchiveReaderAPI, error)
	// privateCAs is ACM Private CA in region (tls.acm_pca_arn).
	privateCAs func(ctx context.Context, region string) (PrivateCAs, error)
	// defaultTags are the provider's default_tags, under every resource's own.
	defaultTags map[string]string
	timeouts    Timeouts
	// poll is how often waits look again; clock is the time every wait and log of durations reads.
	poll  time.Duration
	clock wait.Clock
}

// NewPlatform is the EC2 platform on the provider's AWS clients.
func NewPlatform(clients *awsclient.Clients) *Platform {
	return &Platform{
		newCloud: func(ctx context.Context, region string) (Cloud, error) { return NewCloud(ctx, clients, region) },
		region:   clients.ResolveRegion,
		patroni:  patroniclient.New(bootstrap.DefaultPatroniRESTAPIPort),
		patroniTLS: func(roots *x509.CertPool) Patroni {
			return patroniclient.New(bootstrap.DefaultPatroniRESTAPIPort).WithTLS(roots)
		},
		archiveS3: func(ctx context.Context, region string) (awsclient.ArchiveReaderAPI, error) {
			return clients.S3(ctx, region)
		},
		privateCAs: func(ctx context.Context, region string) (PrivateCAs, error) {
			return awsclient.NewPrivateCAs(ctx, clients, region)
		},
		defaultTags: clients.Config().DefaultTags,
		timeouts:    DefaultTimeouts,
		poll:        2 * time.Second,
		clock:       clients.Clock(),
	}
}

// session is one call's context: the spec, its region and the cloud there.
type session struct {
	p      *Platform
	s      cluster.Spec
	a      *awsspec.Block
	region string
	cloud  Cloud
	// patroni is the client of the nodes' REST API: over https with the cluster's authority when it has one.
	patroni Patroni
	// caCert is the certificate of the authority that issues the cluster's certificates (with TLS, once made;
	// nil otherwise), caPEM it and its chain as the nodes and clients trust them, roots a pool of those. ca is
	// the authority with its key when the provider signs (its own or the user's), pca the ACM Private CA that
	// signs otherwise (pcas its API).
	caCert *x509.Certificate
	caPEM  []byte
	roots  *x509.CertPool
	ca     *pki.Pair
	pca    *awsclient.PrivateCAInfo
	pcas   PrivateCAs
	// superuser is the superuser's password once read (superuserPassword).
	superuser string
	// providerRoleMissing: a login as the provider's role by its certificate was refused (leaderConn), so
	// the role or its pg_hba line is missing; the plan says the apply makes it (ensureProviderRole).
	providerRoleMissing bool
}

func (p *Platform) open(ctx context.Context, s cluster.Spec) (*session, error) {
	a := awsspec.Of(s)
	if a == nil {
		return nil, errors.New("the cluster has no aws block; this is a bug in the provider")
	}
	region, err := p.region(a.Region)
	if err != nil {
		return nil, cluster.Errorf([]string{"aws", "region"}, "Missing Region", "No AWS region is set: set aws.region, the provider's region, or AWS_REGION.")
	}
	c, err := p.newCloud(ctx, region)
	if err != nil {
		return nil, err
	}
	se := &session{p: p, s: s, a: a, region: region, cloud: c, patroni: p.patroni}
	if s.TLS != nil {
		if err := se.loadCA(ctx); err != nil {
			return nil, err
		}
	}
	return se, nil
}

// startArchiving is cluster.StartArchiving for a cluster nothing of which exists yet: its archive
// location (read with the provider's credentials, in the archive's region or else the cluster's) must hold
// no history.
func (se *session) startArchiving(ctx context.Context) error {
	loc, api, ok, err := se.archive(ctx)
	if !ok || err != nil {
		return cluster.StartArchiving(archive.History{}, err, "")
	}
	h, err := awsclient.ReadArchiveHistory(ctx, api, loc)
	return cluster.StartArchiving(h, err, "")
}

// checkArchiveBucket reads the archive bucket's Object Lock and lifecycle rules and holds the backup
// policy to them (cluster.CheckArchiveBucket). A bucket whose rules cannot be read (the provider's
// credentials lack s3:GetBucketObjectLockConfiguration or s3:GetLifecycleConfiguration) is logged, not
// refused: the archive itself may still be readable.
func (se *session) checkArchiveBucket(ctx context.Context) error {
	loc, api, ok, err := se.archive(ctx)
	if !ok || err != nil {
		return nil //nolint:nilerr // what reading the archive fails on is said where it is read (startArchiving, refresh)
	}
	b, err := awsclient.ReadBucketRules(ctx, api, loc.Bucket)
	if err != nil {
		tflog.Warn(ctx, "the archive bucket's Object Lock and lifecycle rules could not be read, so the backup policy was not checked against them", map[string]any{"bucket": loc.Bucket, "error": err.Error()})
		return nil //nolint:nilerr // logged: the check is a guard, and the archive itself may still be readable
	}
	return cluster.CheckArchiveBucket(se.s, loc, b)
}

// archive is the cluster's archive location and the S3 client that reads it (in the archive's region, else
// the cluster's); ok is false without an archive or for a location pgnvme cannot read.
func (se *session) archive(ctx context.Context) (archive.Location, awsclient.ArchiveReaderAPI, bool, error) {
	loc, ok := se.s.ArchiveLocation()
	if !ok || loc.Bucket == "" {
		return loc, nil, false, nil
	}
	api, err := se.archiveReader(ctx, loc)
	return loc, api, err == nil, err
}

// archiveReader is the S3 client that reads the archive at loc: in its region, else the cluster's.
func (se *session) archiveReader(ctx context.Context, loc archive.Location) (awsclient.ArchiveReaderAPI, error) {
	region := loc.Region
	if region == "" {
		region = se.region
	}
	return se.p.archiveS3(ctx, region)
}

// major is the PostgreSQL major version the nodes run.
func major(s cluster.Spec) int {
	if s.PostgresMajor > 0 {
		return s.PostgresMajor
	}
	return capacity.DefaultPostgresMajor
}

// target is what the spec resolves to in AWS.
type target struct {
	subnets map[string]Subnet // by zone
	vpcID   string
	allowed []string
	info    TypeInfo
	image   Image
}

// resolve checks the spec against AWS (subnets in their zones and one VPC, the type with instance store
// and offered in every node's zone, the image of the type's architecture) and resolves the defaults (the
// AMI, the client networks). Problems the user can fix are cluster.FieldErrors at their attribute.
func (se *session) resolve(ctx context.Context) (target, error) {
	a := se.a
	var t target
	var errs []error
	field := func(path []string, summary, format string, args ...any) {
		errs = append(errs, cluster.Errorf(path, summary, format, args...))
	}
	ids := make([]string, 0, len(a.SubnetIDs))
	for _, z := range slices.Sorted(maps.Keys(a.SubnetIDs)) {
		ids = append(ids, a.SubnetIDs[z])
	}
	subnets, err := se.cloud.Subnets(ctx, ids)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return t, cluster.Errorf([]string{"aws", "subnet_ids"}, "Subnet Not Found", "A subnet in aws.subnet_ids does not exist in %s: %v. Give existing subnets, one per node zone.", se.region, err)
		}
		return t, fmt.Errorf("describing the subnets: %w", err)
	}
	byID := map[string]Subnet{}
	for _, sn := range subnets {
		byID[sn.ID] = sn
	}
	t.subnets = map[string]Subnet{}
	vpcs := map[string]bool{}
	for zone, id := range a.SubnetIDs {
		sn, ok := byID[id]
		switch {
		case !ok:
			field([]string{"aws", "subnet_ids"}, "Subnet Not Found", "Subnet %s (for zone %s) does not exist in %s; give an existing subnet.", id, zone, se.region)
		case sn.Zone != zone:
			field([]string{"aws", "subnet_ids"}, "Subnet In Another Zone", "Subnet %s is in zone %s, not %s; map each zone to a subnet in that zone.", id, sn.Zone, zone)
		default:
			t.subnets[zone] = sn
			vpcs[sn.VPCID] = true
			t.vpcID = sn.VPCID
		}
	}
	if len(vpcs) > 1 {
		field([]string{"aws", "subnet_ids"}, "Subnets In Several VPCs", "The subnets are in %d VPCs (%s); the nodes must share one VPC: give subnets of one VPC.", len(vpcs), strings.Join(slices.Sorted(maps.Keys(vpcs)), ", "))
	}

	t.info, err = se.cloud.InstanceType(ctx, a.InstanceType)
	switch {
	case errors.Is(err, ErrNotFound):
		field([]string{"aws", "instance_type"}, "Unknown Instance Type", "EC2 in %s does not know the instance type %s; choose one from pgnvme_instance_types.", se.region, a.InstanceType)
	case err != nil:
		return t, fmt.Errorf("describing instance type %s: %w", a.InstanceType, err)
	case t.info.DiskCount == 0:
		field([]string{"aws", "instance_type"}, "No Instance Store", "Instance type %s has no instance-store disk in %s; pgnvme runs PostgreSQL on local NVMe: choose a type from pgnvme_instance_types.", a.InstanceType, se.region)
	}
	if err == nil {
		zones, zerr := se.cloud.TypeZones(ctx, a.InstanceType)
		if zerr != nil {
			return t, fmt.Errorf("reading where %s is offered: %w", a.InstanceType, zerr)
		}
		for _, n := range se.s.Nodes {
			if n.Zone != "" && !slices.Contains(zones, n.Zone) {
				field([]string{"node"}, "Instance Type Not Offered", "Instance type %s is not offered in zone %s (node %s); it is offered in %s. Choose zones with pgnvme_placement, or another type.",
					a.InstanceType, n.Zone, n.Name, strings.Join(zones, ", "))
			}
		}
	}

	if a.PlacementGroup != "" {
		strategy, err := se.cloud.PlacementGroupStrategy(ctx, a.PlacementGroup)
		switch {
		case errors.Is(err, ErrNotFound):
			field([]string{"aws", "placement_group"}, "Placement Group Not Found", "The placement group %s does not exist in %s; create it first (for example "+
				"aws_placement_group with strategy = \"spread\"), or leave aws.placement_group unset.", a.PlacementGroup, se.region)
		case err != nil:
			return t, fmt.Errorf("describing placement group %s: %w", a.PlacementGroup, err)
		case strategy == "cluster":
			field([]string{"aws", "placement_group"}, "Cluster Placement Group", "The placement group %s has the cluster strategy, which keeps instances in one zone, "+
				"but the nodes are in different zones so that losing a zone loses one node: give a spread (no two nodes on one rack) or partition placement group.", a.PlacementGroup)
		}
	}

	amiID := a.AMIID
	if amiID == "" && len(t.info.Architectures) > 0 {
		param := a.AMIParameterFor(preferredArch(t.info.Architectures))
		amiID, err = se.cloud.Parameter(ctx, param)
		switch {
		case errors.Is(err, ErrNotFound):
			field([]string{"aws", "ami_ssm_parameter"}, "AMI Parameter Not Found", "The SSM parameter %s does not exist in %s; set aws.ami_id, or aws.ami_ssm_parameter to a parameter that holds an AMI ID.", param, se.region)
		case err != nil:
			return t, fmt.Errorf("reading the AMI from SSM parameter %s: %w", param, err)
		}
	}
	if amiID != "" {
		t.image, err = se.cloud.Image(ctx, amiID)
		switch {
		case errors.Is(err, ErrNotFound):
			field([]string{"aws", "ami_id"}, "AMI Not Found", "The AMI %s does not exist in %s (or is not shared with this account); give an AMI of Debian 12.", amiID, se.region)
		case err != nil:
			return t, fmt.Errorf("describing AMI %s: %w", amiID, err)
		case len(t.info.Architectures) > 0 && !slices.Contains(t.info.Architectures, t.image.Architecture):
			field([]string{"aws", "ami_id"}, "AMI Architecture Mismatch", "The AMI %s is for %s, but instance type %s runs %s; give an AMI of the type's architecture.",
				amiID, t.image.Architecture, a.InstanceType, strings.Join(t.info.Architectures, " or "))
		}
	}
	if len(errs) > 0 {
		return t, errors.Join(errs...)
	}
	t.allowed = slices.Clone(a.AllowedCIDRs)
	if len(t.allowed) == 0 {
		cidr, err := se.cloud.VPCCIDR(ctx, t.vpcID)
		if err != nil {
			return t, fmt.Errorf("reading the CIDR of VPC %s: %w", t.vpcID, err)
		}
		t.allowed = []string{cidr}
	}
	return t, nil
}

// preferredArch is x86_64 when the type runs it, else its first architecture.
func preferredArch(archs []string) string {
	if slices.Contains(archs, bootstrap.ArchX86_64) || len(archs) == 0 {
		return bootstrap.ArchX86_64
	}
	return archs[0]
}

// facts are the type's facts for the bootstrap.
func (t target) facts() awsspec.Facts {
	return awsspec.Facts{Architecture: t.image.Architecture, DiskCount: t.info.DiskCount}
}

// standInAddrs are addresses for rendering the nodes of a cluster whose interfaces are not made yet, of the
// longest form an address has (so that a user-data they fit in fits with the real ones).
func standInAddrs(s cluster.Spec) map[string]string {
	out := map[string]string{}
	for i, n := range s.Nodes {
		out[n.Name] = fmt.Sprintf("198.18.255.%d", 200+i)
	}
	return out
}

// render renders every node's user-data (gzip) and what its machine is launched with. A user-data over
// EC2's limit is an error at the parameters, which make most of it.
func (se *session) render(t target, addrs map[string]string) (map[string][]byte, map[string]awsspec.Launch, error) {
	return se.renderWith(awsspec.Render, t, addrs)
}

// renderForm is each node's user-data for the create's launch of every node at once: awsspec.RenderForm.
func (se *session) renderForm(t target, addrs map[string]string) (map[string][]byte, error) {
	data, _, err := se.renderWith(awsspec.RenderForm, t, addrs)
	return data, err
}

// renderRestore is each node's user-data for the launch of a cluster restored from its archive (every
// member lost): awsspec.RenderRestore.
func (se *session) renderRestore(t target, addrs map[string]string) (map[string][]byte, error) {
	data, _, err := se.renderWith(awsspec.RenderRestore, t, addrs)
	return data, err
}

func (se *session) renderWith(render func(cluster.Spec, string, map[string]string, []string, awsspec.Facts) (map[string]bootstrap.UserData, error),
	t target, addrs map[string]string) (map[string][]byte, map[string]awsspec.Launch, error) {
	ud, err := render(se.s, se.region, addrs, t.allowed, t.facts())
	if sizeErr := (*bootstrap.UserDataSizeError)(nil); errors.As(err, &sizeErr) {
		return nil, nil, cluster.Errorf([]string{"parameters"}, "User-Data Too Large", "%s", sizeErr.Error())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rendering the nodes' user-data: %w", err)
	}
	data, launches := map[string][]byte{}, map[string]awsspec.Launch{}
	for name, u := range ud {
		data[name] = u.Gzip()
		launches[name] = awsspec.NewLaunch(se.a, t.image.ID, []byte(u.Identity))
	}
	return data, launches, nil
}

// tags are the tags of every object the platform creates for node ("" for cluster-wide objects): the
// provider's default_tags, the resource's over them, then the platform's own.
func (se *session) tags(node string) map[string]string {
	out := maps.Clone(se.p.defaultTags)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range se.a.Tags {
		out[k] = v
	}
	out[awsspec.TagCluster] = se.s.Name
	if node != "" {
		out[awsspec.TagNode] = node
		out["Name"] = se.s.Name + "-" + node
	}
	return out
}
