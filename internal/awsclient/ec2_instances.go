package awsclient

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// liveInstanceStates are every instance state but terminated.
var liveInstanceStates = []string{
	string(ec2types.InstanceStateNamePending), string(ec2types.InstanceStateNameRunning),
	string(ec2types.InstanceStateNameShuttingDown), string(ec2types.InstanceStateNameStopping),
	string(ec2types.InstanceStateNameStopped),
}

func instanceFrom(in ec2types.Instance) Instance {
	out := Instance{
		ID:        aws.ToString(in.InstanceId),
		Type:      string(in.InstanceType),
		AMI:       aws.ToString(in.ImageId),
		PrivateIP: aws.ToString(in.PrivateIpAddress),
		PublicIP:  aws.ToString(in.PublicIpAddress),
		Tags:      tagMap(in.Tags),
	}
	if in.Placement != nil {
		out.Zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	if in.IamInstanceProfile != nil {
		out.InstanceProfileARN = aws.ToString(in.IamInstanceProfile.Arn)
	}
	if in.State != nil {
		out.State = string(in.State.Name)
	}
	if in.LaunchTime != nil {
		out.LaunchTime = *in.LaunchTime
	}
	for _, n := range in.NetworkInterfaces {
		if n.Attachment == nil || aws.ToInt32(n.Attachment.DeviceIndex) != 0 {
			continue
		}
		out.ENIID = aws.ToString(n.NetworkInterfaceId)
		if ip := aws.ToString(n.PrivateIpAddress); ip != "" {
			out.PrivateIP = ip
		}
		if n.Association != nil && aws.ToString(n.Association.PublicIp) != "" {
			out.PublicIP = aws.ToString(n.Association.PublicIp)
		}
	}
	return out
}

// describeInstances lists the instances that match in, across pages.
func (c *Cloud) describeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	p := ec2.NewDescribeInstancesPaginator(c.ec2, in)
	var out []ec2types.Instance
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

// Instances are the cluster's instances in every state but terminated.
func (c *Cloud) Instances(ctx context.Context, clusterName string) ([]Instance, error) {
	raw, err := c.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		clusterFilter(clusterName), ec2Filter("instance-state-name", liveInstanceStates...),
	}})
	if err != nil {
		return nil, fmt.Errorf("listing the instances of cluster %q: %w", clusterName, err)
	}
	out := make([]Instance, 0, len(raw))
	for _, in := range raw {
		out = append(out, instanceFrom(in))
	}
	return out, nil
}

// isProfilePropagation reports whether RunInstances failed because EC2 does not see an instance profile
// (or its role) just created yet, which passes in seconds. The hashicorp/aws provider retries the same two
// messages; EC2 says, for instance, "Value (pgnvme-x) for parameter iamInstanceProfile.name is invalid.
// Invalid IAM Instance Profile name".
func isProfilePropagation(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != errCodeInvalidParameterValue {
		return false
	}
	msg := strings.ToLower(ae.ErrorMessage())
	return strings.Contains(msg, "invalid iam instance profile") || strings.Contains(msg, " has no associated iam roles")
}

// runInstanceError is the error RunInstance returns for RunInstances' err: ErrInsufficientCapacity wrapped
// when EC2 has no capacity for the type (naming the zone when known), err with context otherwise.
func runInstanceError(err error, instanceType, zone string) error {
	where := ""
	if zone != "" {
		where = " in " + zone
	}
	if errCodeEquals(err, errCodeInsufficientInstanceCapacity) {
		return fmt.Errorf("launching a %s instance%s: %w: %w", instanceType, where, ErrInsufficientCapacity, err)
	}
	return fmt.Errorf("launching a %s instance%s: %w", instanceType, where, err)
}

// RunSpec is one instance to launch.
type RunSpec struct {
	// ClientToken makes the launch idempotent (at most 64 ASCII characters).
	ClientToken string
	// Launch is what the machine is launched with: its type, image, root volume size, key pair, placement
	// group and metadata options (runInstancesInput maps each to RunInstances).
	Launch awsspec.Launch
	// ENIID is the node's network interface, attached as device 0.
	ENIID string
	// InstanceProfile is the IAM instance profile's name.
	InstanceProfile string
	// UserData is the user-data as the instance gets it (gzip), before base64.
	UserData []byte
	// RootDeviceName is the image's root device: a gp3 volume, encrypted, deleted on termination.
	RootDeviceName string
	// Tags go on the instance and its volumes.
	Tags map[string]string
}

func runInstancesInput(spec RunSpec) *ec2.RunInstancesInput {
	in := &ec2.RunInstancesInput{
		MinCount:     aws.Int32(1),
		MaxCount:     aws.Int32(1),
		ImageId:      aws.String(spec.Launch.AMI),
		InstanceType: ec2types.InstanceType(spec.Launch.InstanceType),
		NetworkInterfaces: []ec2types.InstanceNetworkInterfaceSpecification{{
			DeviceIndex: aws.Int32(0), NetworkInterfaceId: aws.String(spec.ENIID),
		}},
		MetadataOptions: &ec2types.InstanceMetadataOptionsRequest{
			HttpTokens:              ec2types.HttpTokensStateRequired,
			HttpEndpoint:            ec2types.InstanceMetadataEndpointStateEnabled,
			HttpPutResponseHopLimit: aws.Int32(int32(cmp.Or(spec.Launch.MetadataHopLimit, awsspec.DefaultMetadataHopLimit))),
		},
		TagSpecifications: tagSpecs(spec.Tags, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume),
	}
	if spec.ClientToken != "" {
		in.ClientToken = aws.String(spec.ClientToken)
	}
	if spec.InstanceProfile != "" {
		in.IamInstanceProfile = &ec2types.IamInstanceProfileSpecification{Name: aws.String(spec.InstanceProfile)}
	}
	if spec.Launch.KeyName != "" {
		in.KeyName = aws.String(spec.Launch.KeyName)
	}
	if spec.Launch.PlacementGroup != "" {
		in.Placement = &ec2types.Placement{GroupName: aws.String(spec.Launch.PlacementGroup)}
	}
	if len(spec.UserData) > 0 {
		in.UserData = aws.String(base64.StdEncoding.EncodeToString(spec.UserData))
	}
	if spec.RootDeviceName != "" {
		ebs := &ec2types.EbsBlockDevice{
			VolumeType:          ec2types.VolumeTypeGp3,
			Encrypted:           aws.Bool(true),
			DeleteOnTermination: aws.Bool(true),
		}
		if spec.Launch.RootVolumeGiB > 0 {
			ebs.VolumeSize = aws.Int32(int32(spec.Launch.RootVolumeGiB))
		}
		in.BlockDeviceMappings = []ec2types.BlockDeviceMapping{{DeviceName: aws.String(spec.RootDeviceName), Ebs: ebs}}
	}
	return in
}

// RunInstance launches one instance on the node's interface, retrying while EC2 does not see the instance
// profile yet. A capacity shortage wraps ErrInsufficientCapacity and names the interface's zone.
func (c *Cloud) RunInstance(ctx context.Context, spec RunSpec) (string, error) {
	in := runInstancesInput(spec)
	out, err := wait.Retry(ctx, "EC2 to accept instance profile "+spec.InstanceProfile, profilePropagationTimeout, c.clock, isProfilePropagation,
		func(ctx context.Context) (*ec2.RunInstancesOutput, error) {
			return c.ec2.RunInstances(ctx, in)
		})
	if err != nil {
		zone := ""
		if errCodeEquals(err, errCodeInsufficientInstanceCapacity) {
			if eni, eniErr := c.findENI(ctx, spec.ENIID); eniErr == nil {
				zone = eni.Zone
			}
		}
		return "", runInstanceError(err, spec.Launch.InstanceType, zone)
	}
	if len(out.Instances) == 0 {
		return "", fmt.Errorf("launching a %s instance: EC2 returned no instance", spec.Launch.InstanceType)
	}
	return aws.ToString(out.Instances[0].InstanceId), nil
}

// findInstance describes one instance; one EC2 does not describe (yet, or any more) is ErrNotFound.
func (c *Cloud) findInstance(ctx context.Context, id string) (ec2types.Instance, error) {
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return ec2types.Instance{}, fmt.Errorf("describing instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if in.State != nil {
				return in, nil
			}
		}
	}
	return ec2types.Instance{}, fmt.Errorf("instance %s: %w", id, ErrNotFound)
}

// statusInstance reads the instance's state name for wait.For.
func (c *Cloud) statusInstance(id string) func(context.Context) (ec2types.Instance, string, error) {
	return func(ctx context.Context) (ec2types.Instance, string, error) {
		in, err := c.findInstance(ctx, id)
		if err != nil {
			return in, "", err
		}
		return in, string(in.State.Name), nil
	}
}

// WaitRunning waits until the instance runs. EC2 may not describe an instance just launched for a while;
// one that ends instead (terminated at launch) fails with EC2's reason.
func (c *Cloud) WaitRunning(ctx context.Context, id string, timeout time.Duration) (Instance, error) {
	raw, err := wait.For(ctx, wait.Spec[ec2types.Instance]{
		What:    fmt.Sprintf("instance %s to run", id),
		Refresh: c.statusInstance(id),
		Retryable: func(err error) bool {
			return errCodeEquals(err, errCodeInvalidInstanceIDNotFound) || errors.Is(err, ErrNotFound)
		},
		Pending: []string{string(ec2types.InstanceStateNamePending)},
		Target:  []string{string(ec2types.InstanceStateNameRunning)},
		Timeout: timeout,
		Clock:   c.clock,
	})
	if err != nil {
		var unexpected *wait.UnexpectedStateError
		if errors.As(err, &unexpected) && raw.StateReason != nil {
			return Instance{}, fmt.Errorf("%w: %s", err, aws.ToString(raw.StateReason.Message))
		}
		return Instance{}, err
	}
	return instanceFrom(raw), nil
}

// Terminate terminates the instances and waits until EC2 reports each terminated (or no longer knows it).
func (c *Cloud) Terminate(ctx context.Context, ids []string, timeout time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if errCodeEquals(err, errCodeInvalidInstanceIDNotFound) {
		// One unknown ID fails the whole call: terminate the others one by one.
		err = nil
		for _, id := range ids {
			_, e := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			if e != nil && !errCodeEquals(e, errCodeInvalidInstanceIDNotFound) {
				err = e
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("terminating instances %s: %w", strings.Join(ids, ", "), err)
	}

	_, err = wait.For(ctx, wait.Spec[struct{}]{
		What:    "instances " + strings.Join(ids, ", ") + " to terminate",
		Refresh: c.statusInstancesTerminated(ids),
		Target:  []string{instancesTerminated},
		Timeout: timeout,
		Clock:   c.clock,
	})
	return err
}

// instancesTerminated is statusInstancesTerminated's state when no instance is left.
const instancesTerminated = "terminated"

// statusInstancesTerminated reads, for wait.For, which of the instances are not terminated yet: their IDs
// and states ("i-1 shutting-down, i-2 running"), so a timeout says which, or instancesTerminated. A filter,
// unlike InstanceIds, does not fail on an ID EC2 no longer knows.
func (c *Cloud) statusInstancesTerminated(ids []string) func(context.Context) (struct{}, string, error) {
	return func(ctx context.Context) (struct{}, string, error) {
		raw, err := c.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{ec2Filter("instance-id", ids...)}})
		if err != nil {
			return struct{}{}, "", fmt.Errorf("describing instances %s: %w", strings.Join(ids, ", "), err)
		}
		var left []string
		for _, in := range raw {
			if in.State != nil && in.State.Name != ec2types.InstanceStateNameTerminated {
				left = append(left, fmt.Sprintf("%s %s", aws.ToString(in.InstanceId), in.State.Name))
			}
		}
		if len(left) == 0 {
			return struct{}{}, instancesTerminated, nil
		}
		slices.Sort(left)
		return struct{}{}, strings.Join(left, ", "), nil
	}
}
