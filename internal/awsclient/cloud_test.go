package awsclient_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

const awsTestRegion = "eu-west-1"

var awsTestT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// awsTest is a Cloud on moto, and the raw clients the test arranges and checks AWS objects with.
type awsTest struct {
	*awsclient.Cloud
	ec2 *ec2.Client
	iam *iam.Client
	ssm *ssm.Client
	elb *elbv2.Client
	// admin is the administrator's configuration under IAM enforcement (enforcedPolicy set), else nil.
	admin *aws.Config
}

// enforcedPolicy, when set (TestOperatorPolicy_moto), is the IAM policy newAWSTest's Cloud runs under, with
// moto's IAM enforcement on; the test's own clients (arranging and checking) are then an administrator's.
var enforcedPolicy string

// newAWSTest starts moto and returns the Cloud NewCloud builds on it: the provider's clients with endpoint
// overrides, and moto's fixed test credentials (with enforcedPolicy, an IAM user's under that policy).
func newAWSTest(t *testing.T) *awsTest {
	t.Helper()
	return newAWSTestVia(t, nil)
}

// startMotoIsolated starts moto with the SDK's environment cut off from this machine's AWS settings
// (no profile, region, shared files or instance metadata; moto's test credentials).
func startMotoIsolated(t *testing.T) *acctest.Moto {
	t.Helper()
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/pgnvme-test/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/pgnvme-test/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	return acctest.StartMoto(t)
}

// newAWSTestVia is newAWSTest with the Cloud's endpoints changed by via (given moto's URL: a proxy in front
// of moto for a service), when via is not nil.
func newAWSTestVia(t *testing.T, via func(motoURL string, e *awsclient.Endpoints)) *awsTest {
	t.Helper()
	m := startMotoIsolated(t)
	var admin *aws.Config
	if enforcedPolicy != "" {
		// The administrator is nodesim.IAMUser, which may also assume the roles EC2 may (TestInstancePolicy_moto).
		creds := m.EnforceIAM(t, awsTestRegion, map[string]string{"operator": enforcedPolicy, nodesim.IAMUser: acctest.AdminPolicy})
		t.Setenv("AWS_ACCESS_KEY_ID", creds["operator"].AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", creds["operator"].SecretAccessKey)
		cfg := m.ConfigAs(awsTestRegion, creds[nodesim.IAMUser])
		admin = &cfg
	}
	endpoints := awsclient.Endpoints{EC2: m.URL, IAM: m.URL, STS: m.URL, SSM: m.URL, S3: m.URL, ELBV2: m.URL}
	clients := awsclient.New(awsclient.Config{Region: awsTestRegion, Endpoints: endpoints, SkipCredentialsValidation: true})
	ctx := t.Context()
	cloudClients := clients
	if via != nil {
		via(m.URL, &endpoints)
		cloudClients = awsclient.New(awsclient.Config{Region: awsTestRegion, Endpoints: endpoints, SkipCredentialsValidation: true})
	}
	cloud, err := awsclient.NewCloud(ctx, cloudClients, awsTestRegion)
	if err != nil {
		t.Fatalf("NewCloud: %v", err)
	}
	at := &awsTest{Cloud: cloud}
	if at.ec2, err = clients.EC2(ctx, awsTestRegion); err != nil {
		t.Fatal(err)
	}
	if at.iam, err = clients.IAM(ctx, awsTestRegion); err != nil {
		t.Fatal(err)
	}
	if at.ssm, err = clients.SSM(ctx, awsTestRegion); err != nil {
		t.Fatal(err)
	}
	if at.elb, err = clients.ELBV2(ctx, awsTestRegion); err != nil {
		t.Fatal(err)
	}
	if admin != nil {
		at.admin = admin
		at.ec2, at.iam, at.ssm, at.elb = ec2.NewFromConfig(*admin), iam.NewFromConfig(*admin), ssm.NewFromConfig(*admin), elbv2.NewFromConfig(*admin)
	}
	return at
}

// vpc creates a VPC 10.20.0.0/16 with a subnet in eu-west-1a and one in eu-west-1b.
func (c *awsTest) vpc(t *testing.T) (string, []string) {
	t.Helper()
	v := acctest.CreateVPC(t, c.ec2, "10.20.0.0/16", "eu-west-1a", "eu-west-1b")
	return v.ID, []string{v.Subnets["eu-west-1a"], v.Subnets["eu-west-1b"]}
}

// image is one of moto's x86_64 EBS images.
func (c *awsTest) image(t *testing.T) string {
	t.Helper()
	out, err := c.ec2.DescribeImages(t.Context(), &ec2.DescribeImagesInput{Filters: []ec2types.Filter{
		{Name: aws.String("architecture"), Values: []string{"x86_64"}},
		{Name: aws.String("root-device-type"), Values: []string{"ebs"}},
	}})
	if err != nil || len(out.Images) == 0 {
		t.Fatalf("no x86_64 EBS image in moto: %v", err)
	}
	return aws.ToString(out.Images[0].ImageId)
}

func tagMap(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, awsclient.ErrNotFound) {
		t.Errorf("%s: got %v, want ErrNotFound", what, err)
	}
}

func TestAWSCloud_lookups(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	vpcID, subnetIDs := c.vpc(t)

	subnets, err := c.Subnets(ctx, []string{subnetIDs[1], subnetIDs[0]})
	if err != nil {
		t.Fatalf("Subnets: %v", err)
	}
	want := []awsclient.Subnet{
		{ID: subnetIDs[1], Zone: "eu-west-1b", VPCID: vpcID, CIDR: "10.20.2.0/24"},
		{ID: subnetIDs[0], Zone: "eu-west-1a", VPCID: vpcID, CIDR: "10.20.1.0/24"},
	}
	for i := range want {
		if subnets[i].ZoneID == "" {
			t.Errorf("subnet %s has no zone ID", subnets[i].ID)
		}
		subnets[i].ZoneID = ""
	}
	if !slices.Equal(subnets, want) {
		t.Errorf("Subnets = %+v, want %+v (in the order asked)", subnets, want)
	}
	_, err = c.Subnets(ctx, []string{subnetIDs[0], "subnet-0123456789abcdef0"})
	wantNotFound(t, "Subnets of a missing subnet", err)
	if s, err := c.Subnets(ctx, nil); err != nil || s != nil {
		t.Errorf("Subnets(nil) = %v, %v; want nothing (not every subnet)", s, err)
	}

	if cidr, err := c.VPCCIDR(ctx, vpcID); err != nil || cidr != "10.20.0.0/16" {
		t.Errorf("VPCCIDR = %q, %v", cidr, err)
	}
	_, err = c.VPCCIDR(ctx, "vpc-0123456789abcdef0")
	wantNotFound(t, "VPCCIDR of a missing VPC", err)

	_, err = c.Parameter(ctx, "/tf-acc/no/such/parameter")
	wantNotFound(t, "Parameter", err)
	if _, err := c.ssm.PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String("/tf-acc/ami/amd64"), Value: aws.String("ami-0123456789abcdef0"), Type: ssmtypes.ParameterTypeString,
	}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Parameter(ctx, "/tf-acc/ami/amd64"); err != nil || v != "ami-0123456789abcdef0" {
		t.Errorf("Parameter = %q, %v", v, err)
	}

	ami := c.image(t)
	img, err := c.Image(ctx, ami)
	if err != nil || img.ID != ami || img.Architecture != "x86_64" || img.RootDeviceName == "" {
		t.Errorf("Image(%s) = %+v, %v", ami, img, err)
	}
	_, err = c.Image(ctx, "ami-0123456789abcdef0")
	wantNotFound(t, "Image of a missing AMI", err)

	info, err := c.InstanceType(ctx, "m6id.large")
	if err != nil {
		t.Fatalf("InstanceType: %v", err)
	}
	if info.Name != "m6id.large" || info.DiskCount != 1 || info.NVMe != "required" || !slices.Equal(info.Architectures, []string{"x86_64"}) {
		t.Errorf("InstanceType(m6id.large) = %+v", info)
	}
	if info, err := c.InstanceType(ctx, "m5.large"); err != nil || info.DiskCount != 0 || info.NVMe != "" {
		t.Errorf("InstanceType(m5.large) = %+v, %v; want no instance storage", info, err)
	}
	_, err = c.InstanceType(ctx, "m6id.enormous")
	wantNotFound(t, "InstanceType of an unknown type", err)

	zones, err := c.TypeZones(ctx, "m6id.large")
	if err != nil || len(zones) == 0 || !slices.IsSorted(zones) {
		t.Fatalf("TypeZones = %v, %v; want sorted zones", zones, err)
	}
	for _, z := range zones {
		if !strings.HasPrefix(z, awsTestRegion) {
			t.Errorf("zone %q is not in %s", z, awsTestRegion)
		}
	}
}

func TestAWSCloud_securityGroup(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	vpcID, _ := c.vpc(t)
	const name = "tf-acc-sg"

	_, err := c.SecurityGroup(ctx, name)
	wantNotFound(t, "SecurityGroup before creation", err)

	allowed := []string{"10.0.0.0/8", "2001:db8::/32"}
	id, err := c.CreateSecurityGroup(ctx, name, vpcID, allowed, map[string]string{"Owner": "tf-acc"})
	if err != nil {
		t.Fatalf("CreateSecurityGroup: %v", err)
	}
	if got, err := c.SecurityGroup(ctx, name); err != nil || got != id {
		t.Fatalf("SecurityGroup = %q, %v; want %s", got, err, id)
	}
	_, err = c.SecurityGroup(ctx, "tf-acc-other")
	wantNotFound(t, "SecurityGroup of another cluster", err)

	out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if err != nil || len(out.SecurityGroups) != 1 {
		t.Fatalf("DescribeSecurityGroups: %v", err)
	}
	sg := out.SecurityGroups[0]
	tags := tagMap(sg.Tags)
	if aws.ToString(sg.GroupName) != "pgnvme-"+name || aws.ToString(sg.VpcId) != vpcID || tags[awsspec.TagCluster] != name || tags["Owner"] != "tf-acc" {
		t.Errorf("group %s: name %q, VPC %q, tags %v", id, aws.ToString(sg.GroupName), aws.ToString(sg.VpcId), tags)
	}
	for _, port := range []int32{5432, 8008, 2379, 2380} {
		var perm *ec2types.IpPermission
		for i, p := range sg.IpPermissions {
			if aws.ToInt32(p.FromPort) == port && aws.ToInt32(p.ToPort) == port && aws.ToString(p.IpProtocol) == "tcp" {
				perm = &sg.IpPermissions[i]
			}
		}
		if perm == nil {
			t.Errorf("no rule for TCP %d in %+v", port, sg.IpPermissions)
			continue
		}
		if len(perm.UserIdGroupPairs) != 1 || aws.ToString(perm.UserIdGroupPairs[0].GroupId) != id {
			t.Errorf("TCP %d: group pairs %+v, want the group itself", port, perm.UserIdGroupPairs)
		}
		var v4, v6 []string
		for _, r := range perm.IpRanges {
			v4 = append(v4, aws.ToString(r.CidrIp))
		}
		for _, r := range perm.Ipv6Ranges {
			v6 = append(v6, aws.ToString(r.CidrIpv6))
		}
		clients := port == 5432 || port == 8008
		if clients && (!slices.Equal(v4, allowed[:1]) || !slices.Equal(v6, allowed[1:])) || !clients && len(v4)+len(v6) > 0 {
			t.Errorf("TCP %d: from %v and %v", port, v4, v6)
		}
	}
	if len(sg.IpPermissionsEgress) == 0 {
		t.Errorf("the default egress rule is gone")
	}

	// Again, as after an interrupted apply: the same group, its rules not duplicated.
	if again, err := c.CreateSecurityGroup(ctx, name, vpcID, allowed, nil); err != nil || again != id {
		t.Errorf("CreateSecurityGroup again = %q, %v; want %s", again, err, id)
	}
	if out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}}); err != nil ||
		len(out.SecurityGroups[0].IpPermissions) != len(sg.IpPermissions) {
		t.Errorf("rules after the second call: %+v, %v; want %d", out, err, len(sg.IpPermissions))
	}

	// moto deletes a group that an interface still holds; EC2 refuses with DependencyViolation until the
	// interfaces are gone. That refusal is injected in front of moto.
	dependency := &smithy.GenericAPIError{Code: "DependencyViolation", Message: "resource " + id + " has a dependent object"}
	clock := wait.NewStepClock(awsTestT0)
	awsclient.SetCloudClock(c.Cloud, clock)
	forever := make([]error, 1000)
	for i := range forever {
		forever[i] = dependency
	}
	calls := c.withFaults("DeleteSecurityGroup", forever...)
	err = c.DeleteSecurityGroup(ctx, id, time.Minute)
	if errorCode(err) != "DependencyViolation" || *calls < 2 || clock.Now().Sub(awsTestT0) != time.Minute {
		t.Errorf("DeleteSecurityGroup while interfaces hold it: %v after %d calls and %s; want DependencyViolation after retrying for the timeout", err, *calls, clock.Now().Sub(awsTestT0))
	}
	if _, err := c.SecurityGroup(ctx, name); err != nil {
		t.Fatalf("the group is gone after a refused deletion: %v", err)
	}
	clock = wait.NewStepClock(awsTestT0)
	awsclient.SetCloudClock(c.Cloud, clock)
	calls = c.withFaults("DeleteSecurityGroup", dependency, dependency)
	if err := c.DeleteSecurityGroup(ctx, id, time.Minute); err != nil || *calls != 3 || len(clock.Sleeps) != 2 {
		t.Fatalf("DeleteSecurityGroup once the interfaces are gone: %v after %d calls and %d waits", err, *calls, len(clock.Sleeps))
	}
	awsclient.SetCloudEC2(c.Cloud, c.ec2)
	awsclient.SetCloudClock(c.Cloud, wait.Real)
	_, err = c.SecurityGroup(ctx, name)
	wantNotFound(t, "SecurityGroup after deletion", err)
	if err := c.DeleteSecurityGroup(ctx, id, time.Minute); err != nil {
		t.Errorf("DeleteSecurityGroup of a deleted group: %v, want success", err)
	}
}

type policyDocument struct {
	Statement []struct {
		Effect    string
		Principal map[string]string
		Action    []string
		Resource  []string
		Condition map[string]map[string]string
	}
}

// awsTestPolicy decodes a policy document as IAM returns it (URL-encoded).
func awsTestPolicy(t *testing.T, doc string) policyDocument {
	t.Helper()
	if unescaped, err := url.QueryUnescape(doc); err == nil {
		doc = unescaped
	}
	var d policyDocument
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("policy %s: %v", doc, err)
	}
	return d
}

// answersLost is a proxy in front of moto (at motoURL) that sends every request on and drops moto's answer
// to the first request of each action in lost (counting each request of it), answering a 500 in its place,
// as a dropped connection or a load balancer's error would: the request is applied, and the SDK retries.
func answersLost(t *testing.T, motoURL string, lost map[string]*atomic.Int32) string {
	t.Helper()
	target, err := url.Parse(motoURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		for action, n := range lost {
			if strings.Contains(string(body), "Action="+action+"&") && n.Add(1) == 1 {
				proxy.ServeHTTP(httptest.NewRecorder(), r) // applied, its answer dropped
				http.Error(w, "<ErrorResponse><Error><Code>InternalFailure</Code><Message>lost</Message></Error></ErrorResponse>", http.StatusInternalServerError)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAWSCloud_instanceProfileAnswerLost: IAM adds the role to the profile but its answer is lost (a 500 in
// its place, as a dropped connection or a load balancer's error would be); the SDK retries, IAM says
// LimitExceeded (a profile holds one role), and CreateInstanceProfile reads the profile and goes on.
func TestAWSCloud_instanceProfileAnswerLost(t *testing.T) {
	var lost atomic.Int32
	c := newAWSTestVia(t, func(motoURL string, e *awsclient.Endpoints) {
		e.IAM = answersLost(t, motoURL, map[string]*atomic.Int32{"AddRoleToInstanceProfile": &lost})
	})
	const name = "tf-acc-lost"
	profile, err := c.CreateInstanceProfile(t.Context(), name, awsTestRegion, "/pgnvme/"+name, "", nil)
	if err != nil || profile != "pgnvme-"+name {
		t.Fatalf("CreateInstanceProfile with the first AddRoleToInstanceProfile answer lost = %q, %v", profile, err)
	}
	if n := lost.Load(); n < 2 {
		t.Fatalf("AddRoleToInstanceProfile was sent %d times; want the retry after the lost answer", n)
	}
	ip, err := c.iam.GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	if err != nil || len(ip.InstanceProfile.Roles) != 1 || aws.ToString(ip.InstanceProfile.Roles[0].RoleName) != profile {
		t.Errorf("GetInstanceProfile: %+v, %v; want the role in the profile", ip, err)
	}
}

func TestAWSCloud_instanceProfile(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	const name = "tf-acc-ip"
	const extra = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::tf-acc-archive/*"]}]}`

	_, err := c.InstanceProfile(ctx, name)
	wantNotFound(t, "InstanceProfile before creation", err)

	profile, err := c.CreateInstanceProfile(ctx, name, awsTestRegion, "/pgnvme/"+name, extra, map[string]string{"Owner": "tf-acc"})
	if err != nil || profile != "pgnvme-"+name {
		t.Fatalf("CreateInstanceProfile = %q, %v", profile, err)
	}
	if got, err := c.InstanceProfile(ctx, name); err != nil || got != profile {
		t.Errorf("InstanceProfile = %q, %v", got, err)
	}

	role, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(profile)})
	if err != nil {
		t.Fatalf("GetRole: %v", err)
	}
	trust := awsTestPolicy(t, aws.ToString(role.Role.AssumeRolePolicyDocument))
	if aws.ToString(role.Role.Path) != "/pgnvme/" || len(trust.Statement) != 1 || trust.Statement[0].Principal["Service"] != "ec2.amazonaws.com" {
		t.Errorf("role: path %q, trust %+v", aws.ToString(role.Role.Path), trust)
	}
	roleTags := map[string]string{}
	for _, tag := range role.Role.Tags {
		roleTags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if roleTags[awsspec.TagCluster] != name || roleTags["Owner"] != "tf-acc" {
		t.Errorf("role tags %v", roleTags)
	}

	ssmPolicy, err := c.iam.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(profile), PolicyName: aws.String("pgnvme-ssm")})
	if err != nil {
		t.Fatalf("GetRolePolicy pgnvme-ssm: %v", err)
	}
	doc := awsTestPolicy(t, aws.ToString(ssmPolicy.PolicyDocument))
	if len(doc.Statement) != 2 ||
		!slices.Contains(doc.Statement[0].Resource, "arn:aws:ssm:eu-west-1:*:parameter/pgnvme/tf-acc-ip/*") ||
		!slices.Contains(doc.Statement[0].Action, "ssm:GetParametersByPath") ||
		doc.Statement[1].Condition["StringEquals"]["kms:ViaService"] != "ssm.eu-west-1.amazonaws.com" {
		t.Errorf("pgnvme-ssm = %+v", doc)
	}
	nodePolicy, err := c.iam.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(profile), PolicyName: aws.String("pgnvme-node")})
	if err != nil || !strings.Contains(aws.ToString(nodePolicy.PolicyDocument), "tf-acc-archive") {
		t.Errorf("GetRolePolicy pgnvme-node: %v", err)
	}
	ip, err := c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	if err != nil || aws.ToString(ip.InstanceProfile.Path) != "/pgnvme/" || len(ip.InstanceProfile.Roles) != 1 || aws.ToString(ip.InstanceProfile.Roles[0].RoleName) != profile {
		t.Errorf("GetInstanceProfile: %v", err)
	}

	// Again, as after an interrupted apply, now without the extra policy: adopted, and pgnvme-node removed.
	if again, err := c.CreateInstanceProfile(ctx, name, awsTestRegion, "/pgnvme/"+name, "", nil); err != nil || again != profile {
		t.Errorf("CreateInstanceProfile again = %q, %v", again, err)
	}
	policies, err := c.iam.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(profile)})
	if err != nil || !slices.Equal(policies.PolicyNames, []string{"pgnvme-ssm"}) {
		t.Errorf("inline policies after the second call: %v, %v", policies, err)
	}

	// A role of the same name that is not the cluster's is not taken over.
	if _, err := c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("pgnvme-tf-acc-foreign"), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateInstanceProfile(ctx, "tf-acc-foreign", awsTestRegion, "/pgnvme/x", "", nil); err == nil || !strings.Contains(err.Error(), "is not cluster") {
		t.Errorf("CreateInstanceProfile over a foreign role: %v", err)
	}
	if _, err := c.CreateInstanceProfile(ctx, strings.Repeat("x", 58), awsTestRegion, "/pgnvme/x", "", nil); err == nil {
		t.Errorf("a role name over 64 characters was accepted")
	}

	if err := c.DeleteInstanceProfile(ctx, name); err != nil {
		t.Fatalf("DeleteInstanceProfile: %v", err)
	}
	_, err = c.InstanceProfile(ctx, name)
	wantNotFound(t, "InstanceProfile after deletion", err)
	if _, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(profile)}); errorCode(err) != "NoSuchEntity" {
		t.Errorf("GetRole after deletion: %v, want NoSuchEntity", err)
	}
	if err := c.DeleteInstanceProfile(ctx, name); err != nil {
		t.Errorf("DeleteInstanceProfile again: %v, want success", err)
	}
}

func TestAWSCloud_secrets(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	const name = "/pgnvme/tf-acc-secrets/superuser"

	_, err := c.Secret(ctx, name)
	wantNotFound(t, "Secret before creation", err)

	tags := map[string]string{awsspec.TagCluster: "tf-acc-secrets"}
	if err := c.PutSecret(ctx, name, "s3cret", tags); err != nil {
		t.Fatalf("PutSecret: %v", err)
	}
	if err := c.PutSecret(ctx, name, "another", tags); err != nil {
		t.Fatalf("PutSecret of an existing parameter: %v, want success", err)
	}
	if v, err := c.Secret(ctx, name); err != nil || v != "s3cret" {
		t.Errorf("Secret = %q, %v; want the first value kept", v, err)
	}
	p, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil || p.Parameter.Type != ssmtypes.ParameterTypeSecureString {
		t.Errorf("GetParameter: %+v, %v; want a SecureString", p, err)
	}
	tl, err := c.ssm.ListTagsForResource(ctx, &ssm.ListTagsForResourceInput{ResourceType: ssmtypes.ResourceTypeForTaggingParameter, ResourceId: aws.String(name)})
	if err != nil || len(tl.TagList) != 1 || aws.ToString(tl.TagList[0].Key) != awsspec.TagCluster {
		t.Errorf("parameter tags: %+v, %v", tl, err)
	}

	// A value longer than a standard parameter holds (a bundle with a long chain) asks SSM to choose the tier.
	long := name + "-long"
	if err := c.StoreSecret(ctx, long, strings.Repeat("x", 5000), tags); err != nil {
		t.Fatal(err)
	}
	dp, err := c.ssm.DescribeParameters(ctx, &ssm.DescribeParametersInput{ParameterFilters: []ssmtypes.ParameterStringFilter{{Key: aws.String("Name"), Values: []string{long, name}}}})
	if err != nil || len(dp.Parameters) != 2 {
		t.Fatalf("DescribeParameters: %+v, %v", dp, err)
	}
	for _, p := range dp.Parameters {
		want := ssmtypes.ParameterTierStandard
		if aws.ToString(p.Name) == long {
			want = ssmtypes.ParameterTierIntelligentTiering
		}
		if p.Tier != want {
			t.Errorf("%s's tier: %q, want %q", aws.ToString(p.Name), p.Tier, want)
		}
	}

	// More than one DeleteParameters batch, with names that do not exist.
	names := []string{"/pgnvme/tf-acc-secrets/never-created-first", long, name}
	for i := range 11 {
		n := name + "-" + string(rune('a'+i))
		if err := c.PutSecret(ctx, n, "x", nil); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	names = append(names, "/pgnvme/tf-acc-secrets/never-created")
	// Which exist, in the order asked, across more than one GetParameters batch.
	if got, err := c.ExistingParameters(ctx, names); err != nil || !slices.Equal(got, names[1:len(names)-1]) {
		t.Errorf("ExistingParameters = %v, %v; want %v", got, err, names[1:len(names)-1])
	}
	if err := c.DeleteSecrets(ctx, names); err != nil {
		t.Fatalf("DeleteSecrets: %v", err)
	}
	for _, n := range names {
		_, err := c.Secret(ctx, n)
		wantNotFound(t, "Secret after DeleteSecrets", err)
	}
	if err := c.DeleteSecrets(ctx, names); err != nil {
		t.Errorf("DeleteSecrets again: %v", err)
	}
}

func TestAWSCloud_ENIs(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	vpcID, subnetIDs := c.vpc(t)
	const name = "tf-acc-eni"
	sg, err := c.CreateSecurityGroup(ctx, name, vpcID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	tags := map[string]string{awsspec.TagCluster: name, awsspec.TagNode: "a"}
	eni, err := c.CreateENI(ctx, subnetIDs[1], nil, "tf-acc node a", tags)
	if err != nil {
		t.Fatalf("CreateENI: %v", err)
	}
	if !strings.HasPrefix(eni.ID, "eni-") || eni.SubnetID != subnetIDs[1] || eni.VPCID != vpcID || eni.Zone != "eu-west-1b" ||
		!strings.HasPrefix(eni.PrivateIP, "10.20.2.") || eni.Status != "available" || eni.InstanceID != "" || eni.Tags[awsspec.TagNode] != "a" {
		t.Errorf("CreateENI = %+v", eni)
	}
	if _, err := c.CreateENI(ctx, subnetIDs[0], nil, "", map[string]string{awsspec.TagCluster: "tf-acc-other"}); err != nil {
		t.Fatal(err)
	}

	enis, err := c.ENIs(ctx, name)
	if err != nil || len(enis) != 1 || enis[0].ID != eni.ID || enis[0].PrivateIP != eni.PrivateIP || enis[0].VPCID != vpcID || enis[0].Tags[awsspec.TagCluster] != name {
		t.Fatalf("ENIs = %+v, %v; want only %s", enis, err, eni.ID)
	}

	if err := c.SetENISecurityGroups(ctx, eni.ID, []string{sg}); err != nil {
		t.Fatalf("SetENISecurityGroups: %v", err)
	}
	if enis, err := c.ENIs(ctx, name); err != nil || len(enis) != 1 || !slices.Equal(enis[0].Groups, []string{sg}) {
		t.Errorf("ENIs after SetENISecurityGroups = %+v, %v; want group %s", enis, err, sg)
	}
	wantNotFound(t, "SetENISecurityGroups of a missing interface", c.SetENISecurityGroups(ctx, "eni-0123456789abcdef0", []string{sg}))

	if err := c.WaitENIAvailable(ctx, eni.ID, time.Minute); err != nil {
		t.Errorf("WaitENIAvailable: %v", err)
	}
	wantNotFound(t, "WaitENIAvailable of a missing interface", c.WaitENIAvailable(ctx, "eni-0123456789abcdef0", time.Minute))

	if err := c.DeleteENI(ctx, eni.ID); err != nil {
		t.Fatalf("DeleteENI: %v", err)
	}
	if enis, err := c.ENIs(ctx, name); err != nil || len(enis) != 0 {
		t.Errorf("ENIs after deletion = %+v, %v", enis, err)
	}
	if err := c.DeleteENI(ctx, eni.ID); err != nil {
		t.Errorf("DeleteENI again: %v, want success", err)
	}
}

func awsTestUserData(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte("#cloud-config\nruncmd: [echo tf-acc]\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestAWSCloud_instances(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	vpcID, subnetIDs := c.vpc(t)
	const name = "tf-acc-run"
	sg, err := c.CreateSecurityGroup(ctx, name, vpcID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	profile, err := c.CreateInstanceProfile(ctx, name, awsTestRegion, "/pgnvme/"+name, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	eni, err := c.CreateENI(ctx, subnetIDs[0], []string{sg}, "", map[string]string{awsspec.TagCluster: name, awsspec.TagNode: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ami := c.image(t)
	img, err := c.Image(ctx, ami)
	if err != nil {
		t.Fatal(err)
	}
	userData := awsTestUserData(t)
	tags := map[string]string{awsspec.TagCluster: name, awsspec.TagNode: "a", awsspec.TagConfig: "cfg1"}

	if list, err := c.Instances(ctx, name); err != nil || len(list) != 0 {
		t.Fatalf("Instances before launch = %+v, %v", list, err)
	}
	id, err := c.RunInstance(ctx, awsclient.RunSpec{
		ClientToken: "tf-acc-run-a-1", Launch: awsspec.Launch{InstanceType: "m6id.large", AMI: ami, RootVolumeGiB: 20, MetadataHopLimit: 3}, ENIID: eni.ID,
		InstanceProfile: profile, UserData: userData, RootDeviceName: img.RootDeviceName, Tags: tags,
	})
	if err != nil {
		t.Fatalf("RunInstance: %v", err)
	}
	running, err := c.WaitRunning(ctx, id, time.Minute)
	if err != nil {
		t.Fatalf("WaitRunning: %v", err)
	}
	if running.ID != id || running.State != "running" || running.ENIID != eni.ID || running.PrivateIP != eni.PrivateIP {
		t.Errorf("WaitRunning = %+v; want running on %s (%s)", running, eni.ID, eni.PrivateIP)
	}

	list, err := c.Instances(ctx, name)
	if err != nil || len(list) != 1 {
		t.Fatalf("Instances = %+v, %v", list, err)
	}
	got := list[0]
	if got.ID != id || got.Type != "m6id.large" || got.AMI != ami || got.Zone != "eu-west-1a" || got.State != "running" ||
		got.ENIID != eni.ID || got.PrivateIP != eni.PrivateIP || got.Tags[awsspec.TagConfig] != "cfg1" || got.LaunchTime.IsZero() ||
		!strings.HasSuffix(got.InstanceProfileARN, ":instance-profile/pgnvme/"+profile) {
		t.Errorf("Instances[0] = %+v", got)
	}
	if other, err := c.Instances(ctx, "tf-acc-other"); err != nil || len(other) != 0 {
		t.Errorf("Instances of another cluster = %+v, %v", other, err)
	}

	// What the launch asked for, as EC2 (moto) reports it.
	raw, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	in := raw.Reservations[0].Instances[0]
	if in.IamInstanceProfile == nil || !strings.HasSuffix(aws.ToString(in.IamInstanceProfile.Arn), "/"+profile) {
		t.Errorf("instance profile %+v, want %s", in.IamInstanceProfile, profile)
	}
	if mo := in.MetadataOptions; mo == nil || mo.HttpTokens != ec2types.HttpTokensStateRequired || aws.ToInt32(mo.HttpPutResponseHopLimit) != 3 {
		t.Errorf("metadata options %+v, want IMDSv2 only with the launch's hop limit 3", in.MetadataOptions)
	}
	ud, err := c.ec2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: ec2types.InstanceAttributeNameUserData})
	if err != nil || ud.UserData == nil {
		t.Fatalf("DescribeInstanceAttribute userData: %v", err)
	}
	if decoded, err := base64.StdEncoding.DecodeString(aws.ToString(ud.UserData.Value)); err != nil || !bytes.Equal(decoded, userData) {
		t.Errorf("user-data comes back as %q (%v), want the gzip bytes base64-encoded once", aws.ToString(ud.UserData.Value), err)
	}
	vols, err := c.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{{Name: aws.String("attachment.instance-id"), Values: []string{id}}}})
	if err != nil || len(vols.Volumes) != 1 {
		t.Fatalf("DescribeVolumes: %+v, %v", vols, err)
	}
	vol := vols.Volumes[0]
	if vol.VolumeType != ec2types.VolumeTypeGp3 || !aws.ToBool(vol.Encrypted) || aws.ToInt32(vol.Size) != 20 || tagMap(vol.Tags)[awsspec.TagCluster] != name {
		t.Errorf("root volume: type %s, encrypted %v, %d GiB, tags %v", vol.VolumeType, aws.ToBool(vol.Encrypted), aws.ToInt32(vol.Size), tagMap(vol.Tags))
	}

	enis, err := c.ENIs(ctx, name)
	if err != nil || len(enis) != 1 || enis[0].Status != "in-use" || enis[0].InstanceID != id || !slices.Equal(enis[0].Groups, []string{sg}) {
		t.Errorf("ENIs while attached = %+v, %v", enis, err)
	}
	clock := wait.NewStepClock(awsTestT0)
	awsclient.SetCloudClock(c.Cloud, clock)
	err = c.WaitENIAvailable(ctx, eni.ID, time.Minute)
	awsclient.SetCloudClock(c.Cloud, wait.Real)
	var timeout *wait.TimeoutError
	if !errors.As(err, &timeout) || timeout.LastState != "in-use" {
		t.Errorf("WaitENIAvailable while attached: %v, want a timeout in state in-use", err)
	}

	// An ID EC2 does not know fails TerminateInstances as a whole; Terminate still ends the others.
	if err := c.Terminate(ctx, []string{id, "i-0123456789abcdef0"}, time.Minute); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	if list, err := c.Instances(ctx, name); err != nil || len(list) != 0 {
		t.Errorf("Instances after Terminate = %+v, %v", list, err)
	}
	if _, err := c.WaitRunning(ctx, id, time.Minute); err == nil {
		t.Errorf("WaitRunning of a terminated instance succeeded")
	}
	if err := c.Terminate(ctx, []string{id}, time.Minute); err != nil {
		t.Errorf("Terminate again: %v", err)
	}
	// EC2 detaches the interface when its instance terminates; moto (5.2.1) leaves it "in-use", attached
	// to the terminated instance, and deletes it all the same (EC2 would refuse InvalidNetworkInterface.InUse).
	// So WaitENIAvailable after Terminate is not shown here.
	if err := c.DeleteENI(ctx, eni.ID); err != nil {
		t.Errorf("DeleteENI after Terminate: %v", err)
	}
}

// withFaults makes the Cloud's EC2 calls of operation fail with faults, one per call, before they reach
// moto; later calls go through. It returns the number of such calls made.
func (c *awsTest) withFaults(operation string, faults ...error) *int {
	calls := new(int)
	inject := middleware.InitializeMiddlewareFunc("tf-acc-faults", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		if awsmiddleware.GetOperationName(ctx) == operation {
			i := *calls
			*calls++
			if i < len(faults) {
				return middleware.InitializeOutput{}, middleware.Metadata{}, faults[i]
			}
		}
		return next.HandleInitialize(ctx, in)
	})
	awsclient.SetCloudEC2(c.Cloud, ec2.New(c.ec2.Options(), func(o *ec2.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error { return s.Initialize.Add(inject, middleware.After) })
	}))
	return calls
}

// moto neither lags behind IAM nor runs out of capacity: these faults are injected in front of it.
func TestAWSCloud_runInstanceFaults(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	_, subnetIDs := c.vpc(t)
	eni, err := c.CreateENI(ctx, subnetIDs[1], nil, "", map[string]string{awsspec.TagCluster: "tf-acc-faults"})
	if err != nil {
		t.Fatal(err)
	}
	spec := awsclient.RunSpec{Launch: awsspec.Launch{InstanceType: "m6id.large", AMI: c.image(t)}, ENIID: eni.ID}
	propagation := &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Value (pgnvme-tf-acc) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name"}
	capacity := &smithy.GenericAPIError{Code: "InsufficientInstanceCapacity", Message: "We currently do not have sufficient m6id.large capacity in the Availability Zone you requested (eu-west-1b)."}

	t.Run("profile propagation is retried", func(t *testing.T) {
		clock := wait.NewStepClock(awsTestT0)
		awsclient.SetCloudClock(c.Cloud, clock)
		calls := c.withFaults("RunInstances", propagation, propagation)
		id, err := c.RunInstance(ctx, spec)
		if err != nil || !strings.HasPrefix(id, "i-") || *calls != 3 || len(clock.Sleeps) != 2 {
			t.Errorf("RunInstance = %q, %v after %d calls and %d waits; want an instance at the third call", id, err, *calls, len(clock.Sleeps))
		}
	})
	t.Run("profile propagation gives up after its timeout", func(t *testing.T) {
		clock := wait.NewStepClock(awsTestT0)
		awsclient.SetCloudClock(c.Cloud, clock)
		faults := make([]error, 1000)
		for i := range faults {
			faults[i] = propagation
		}
		calls := c.withFaults("RunInstances", faults...)
		_, err := c.RunInstance(ctx, spec)
		if errorCode(err) != "InvalidParameterValue" || errors.Is(err, awsclient.ErrInsufficientCapacity) || *calls < 2 {
			t.Errorf("RunInstance = %v after %d calls; want the propagation error", err, *calls)
		}
		if elapsed := clock.Now().Sub(awsTestT0); elapsed != awsclient.ProfilePropagationTimeout {
			t.Errorf("retried for %s, want %s", elapsed, awsclient.ProfilePropagationTimeout)
		}
	})
	t.Run("capacity is not retried and names type and zone", func(t *testing.T) {
		awsclient.SetCloudClock(c.Cloud, wait.NewStepClock(awsTestT0))
		calls := c.withFaults("RunInstances", capacity)
		_, err := c.RunInstance(ctx, spec)
		if !errors.Is(err, awsclient.ErrInsufficientCapacity) || !strings.Contains(err.Error(), "m6id.large") || !strings.Contains(err.Error(), "in eu-west-1b") || *calls != 1 {
			t.Errorf("RunInstance = %v after %d calls; want ErrInsufficientCapacity naming m6id.large in eu-west-1b, at once", err, *calls)
		}
	})
	t.Run("another InvalidParameterValue is not retried", func(t *testing.T) {
		awsclient.SetCloudClock(c.Cloud, wait.NewStepClock(awsTestT0))
		calls := c.withFaults("RunInstances", &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Invalid value 'x' for instanceType"})
		if _, err := c.RunInstance(ctx, spec); err == nil || *calls != 1 {
			t.Errorf("RunInstance = %v after %d calls; want the error at once", err, *calls)
		}
	})
}
