package awsclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Hooks for the moto tests in cloud_test.go, elb_test.go and ec2_eip_test.go, which are package awsclient_test because internal/acctest
// imports the provider, which imports this package.

// SetCloudClock makes c's waits and retries run on clock.
func SetCloudClock(c *Cloud, clock wait.Clock) { c.clock = clock }

// SetCloudEC2 replaces c's EC2 client (to put faults in front of moto).
func SetCloudEC2(c *Cloud, client *ec2.Client) { c.ec2 = client }

// ProfilePropagationTimeout is how long RunInstance retries the instance profile's propagation.
const ProfilePropagationTimeout = profilePropagationTimeout

func TestAWSIsProfilePropagation(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"profile name", &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Value (pgnvme-x) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name"}, true},
		{"profile ARN", &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Invalid IAM Instance Profile ARN"}, true},
		{"role", &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Value (pgnvme-x) for parameter iamInstanceProfile.name is invalid. The instance profile pgnvme-x has no associated IAM Roles"}, true},
		{"wrapped", wrapOp(&smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Invalid IAM Instance Profile name"}), true},
		{"other parameter", &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Invalid value for instanceType"}, false},
		{"other code", &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "Invalid IAM Instance Profile name"}, false},
		{"not an API error", errors.New("Invalid IAM Instance Profile name"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isProfilePropagation(tt.err); got != tt.want {
				t.Errorf("isProfilePropagation(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// wrapOp wraps err as the SDK does.
func wrapOp(err error) error {
	return &smithy.OperationError{ServiceID: "EC2", OperationName: "RunInstances", Err: err}
}

func TestAWSRunInstanceError(t *testing.T) {
	capacity := wrapOp(&smithy.GenericAPIError{Code: "InsufficientInstanceCapacity", Message: "We currently do not have sufficient m6id.large capacity"})
	tests := []struct {
		name, zone   string
		err          error
		wantCapacity bool
		wantText     []string
	}{
		{"capacity in a zone", "eu-west-1a", capacity, true, []string{"m6id.large instance in eu-west-1a", "insufficient instance capacity", "We currently do not have"}},
		{"capacity, zone unknown", "", capacity, true, []string{"launching a m6id.large instance: insufficient"}},
		{"another error", "", wrapOp(&smithy.GenericAPIError{Code: "InvalidAMIID.NotFound", Message: "no such AMI"}), false, []string{"m6id.large", "no such AMI"}},
		{"not an API error", "", context.DeadlineExceeded, false, []string{"m6id.large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runInstanceError(tt.err, "m6id.large", tt.zone)
			if errors.Is(err, ErrInsufficientCapacity) != tt.wantCapacity || !errors.Is(err, tt.err) {
				t.Errorf("runInstanceError = %v; ErrInsufficientCapacity %v, want %v, and the original error", err, errors.Is(err, ErrInsufficientCapacity), tt.wantCapacity)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}

func TestAWSSSMReadPolicy(t *testing.T) {
	tests := []struct {
		region, path string
		wantARN      string
	}{
		{"eu-west-1", "/pgnvme/c1", "arn:aws:ssm:eu-west-1:*:parameter/pgnvme/c1"},
		{"eu-west-1", "/pgnvme/c1/", "arn:aws:ssm:eu-west-1:*:parameter/pgnvme/c1"},
		{"cn-north-1", "/pgnvme/c1", "arn:aws-cn:ssm:cn-north-1:*:parameter/pgnvme/c1"},
		{"us-gov-west-1", "/pgnvme/c1", "arn:aws-us-gov:ssm:us-gov-west-1:*:parameter/pgnvme/c1"},
	}
	for _, tt := range tests {
		t.Run(tt.region+tt.path, func(t *testing.T) {
			var d policyDocument
			if err := json.Unmarshal([]byte(ssmReadPolicy(tt.region, tt.path)), &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Statement) != 2 || !slices.Equal(d.Statement[0].Resource, []string{tt.wantARN, tt.wantARN + "/*"}) ||
				!slices.Equal(d.Statement[0].Action, []string{"ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath"}) {
				t.Errorf("read statement %+v", d.Statement)
			}
			kms := d.Statement[len(d.Statement)-1]
			if !slices.Equal(kms.Action, []string{"kms:Decrypt"}) || kms.Condition["StringEquals"]["kms:ViaService"] != "ssm."+tt.region+".amazonaws.com" {
				t.Errorf("decrypt statement %+v", kms)
			}
		})
	}
}

// moto (5.2.1) implements no placement group API, so a focused fake answers DescribePlacementGroups as EC2
// does (its Query protocol's XML), and the launch's placement is read from the request RunInstance builds.
func TestAWSPlacementGroup(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "DescribePlacementGroups" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		switch r.Form.Get("GroupName.1") {
		case "racks":
			fmt.Fprint(w, `<DescribePlacementGroupsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r1</requestId>`+
				`<placementGroupSet><item><groupName>racks</groupName><strategy>spread</strategy><state>available</state></item></placementGroupSet>`+
				`</DescribePlacementGroupsResponse>`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `<Response><Errors><Error><Code>InvalidPlacementGroup.Unknown</Code><Message>The Placement Group '%s' is unknown.</Message></Error></Errors><RequestID>r2</RequestID></Response>`,
				r.Form.Get("GroupName.1"))
		}
	}))
	t.Cleanup(srv.Close)
	c := &Cloud{ec2: ec2.New(ec2.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})}
	if s, err := c.PlacementGroupStrategy(t.Context(), "racks"); err != nil || s != "spread" {
		t.Errorf("PlacementGroupStrategy(racks) = %q, %v; want spread", s, err)
	}
	if _, err := c.PlacementGroupStrategy(t.Context(), "missing"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "placement group missing") {
		t.Errorf("PlacementGroupStrategy(missing) = %v; want ErrNotFound naming the group", err)
	}
	if in := runInstancesInput(RunSpec{Launch: awsspec.Launch{PlacementGroup: "racks"}}); in.Placement == nil || aws.ToString(in.Placement.GroupName) != "racks" {
		t.Errorf("RunInstances placement %+v; want the group racks", in.Placement)
	}
	if in := runInstancesInput(RunSpec{}); in.Placement != nil {
		t.Errorf("RunInstances without a placement group asks for %+v", in.Placement)
	}
}

// Each launch setting reaches RunInstances: the metadata hop limit (IMDSv2 stays required), a launch built
// without the block's defaults getting the default hop limit.
func TestRunInstancesInputLaunch(t *testing.T) {
	for _, tc := range []struct {
		launch awsspec.Launch
		hops   int32
	}{
		{awsspec.Launch{MetadataHopLimit: 1}, 1},
		{awsspec.Launch{MetadataHopLimit: 5}, 5},
		{awsspec.Launch{}, awsspec.DefaultMetadataHopLimit},
	} {
		mo := runInstancesInput(RunSpec{Launch: tc.launch}).MetadataOptions
		if mo == nil || aws.ToInt32(mo.HttpPutResponseHopLimit) != tc.hops || mo.HttpTokens != ec2types.HttpTokensStateRequired {
			t.Errorf("launch %+v: metadata options %+v; want hop limit %d, IMDSv2 required", tc.launch, mo, tc.hops)
		}
	}
	in := runInstancesInput(RunSpec{Launch: awsspec.Launch{InstanceType: "m6id.large", AMI: "ami-1", KeyName: "ops", RootVolumeGiB: 24}, RootDeviceName: "/dev/xvda"})
	if in.InstanceType != "m6id.large" || aws.ToString(in.ImageId) != "ami-1" || aws.ToString(in.KeyName) != "ops" ||
		len(in.BlockDeviceMappings) != 1 || aws.ToInt32(in.BlockDeviceMappings[0].Ebs.VolumeSize) != 24 {
		t.Errorf("RunInstances %+v; want the launch's type, image, key pair and a 24 GiB root volume", in)
	}
}
