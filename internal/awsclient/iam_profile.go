package awsclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The role and instance profile the platform creates: both awsObjectName(cluster), under iamPath, with the
// inline policies ssmPolicyName (read the cluster's parameters) and nodePolicyName (the user's extra policy).
const (
	iamPath        = "/pgnvme/"
	ssmPolicyName  = "pgnvme-ssm"
	nodePolicyName = "pgnvme-node"
	// maxRoleName is IAM's limit on a role name.
	maxRoleName = 64
)

type policyDocument struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Effect    string                       `json:"Effect"`
	Principal map[string]string            `json:"Principal,omitempty"`
	Action    []string                     `json:"Action"`
	Resource  []string                     `json:"Resource,omitempty"`
	Condition map[string]map[string]string `json:"Condition,omitempty"`
}

func (d policyDocument) String() string {
	b, _ := json.Marshal(d) // plain strings, maps and slices always encode
	return string(b)
}

// ec2TrustPolicy lets EC2 assume the role.
func ec2TrustPolicy() string {
	return policyDocument{Version: "2012-10-17", Statement: []policyStatement{{
		Effect:    "Allow",
		Principal: map[string]string{"Service": "ec2.amazonaws.com"},
		Action:    []string{"sts:AssumeRole"},
	}}}.String()
}

// ssmReadPolicy reads the parameters under ssmPath in region (GetParametersByPath authorizes on the path
// itself, the others on each parameter) and decrypts them with the key SSM uses, only through SSM.
func ssmReadPolicy(region, ssmPath string) string {
	path := strings.TrimSuffix(ssmPath, "/")
	arn := fmt.Sprintf("arn:%s:ssm:%s:*:parameter%s", archive.PartitionOf(region), region, path)
	return policyDocument{Version: "2012-10-17", Statement: []policyStatement{
		{
			Effect:   "Allow",
			Action:   []string{"ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath"},
			Resource: []string{arn, arn + "/*"},
		},
		{
			Effect:    "Allow",
			Action:    []string{"kms:Decrypt"},
			Resource:  []string{"*"},
			Condition: map[string]map[string]string{"StringEquals": {"kms:ViaService": "ssm." + region + ".amazonaws.com"}},
		},
	}}.String()
}

// profileRoles are the names of the roles in the instance profile; a missing profile is ErrNotFound.
func (c *Cloud) profileRoles(ctx context.Context, name string) ([]string, error) {
	out, err := c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return nil, notFound(err, "IAM instance profile "+name, "reading", errCodeNoSuchEntity)
	}
	var roles []string
	if out.InstanceProfile != nil {
		for _, r := range out.InstanceProfile.Roles {
			roles = append(roles, aws.ToString(r.RoleName))
		}
	}
	return roles, nil
}

// InstanceProfile finds the profile CreateInstanceProfile made for the cluster.
func (c *Cloud) InstanceProfile(ctx context.Context, clusterName string) (string, error) {
	name := awsObjectName(clusterName)
	if _, err := c.profileRoles(ctx, name); err != nil {
		return "", err
	}
	return name, nil
}

// CreateInstanceProfile creates the role and profile pgnvme-<cluster> (path /pgnvme/, tagged with the
// cluster tag and tags) and waits until IAM shows the role in the profile. After an interrupted call it
// adopts the cluster's role and profile and completes them; a role of that name that is not the cluster's
// is an error.
func (c *Cloud) CreateInstanceProfile(ctx context.Context, clusterName, region, ssmPath, extraPolicy string, tags map[string]string) (string, error) {
	name := awsObjectName(clusterName)
	if len(name) > maxRoleName {
		return "", fmt.Errorf("IAM role name %s is longer than %d characters: give the cluster a shorter name or an iam_instance_profile", name, maxRoleName)
	}
	all := withClusterTag(tags, clusterName)

	role, adopted, err := createRole(ctx, c.iam, &iam.CreateRoleInput{
		RoleName:                 aws.String(name),
		Path:                     aws.String(iamPath),
		AssumeRolePolicyDocument: aws.String(ec2TrustPolicy()),
		Description:              aws.String(fmt.Sprintf("pgnvme cluster %s: its EC2 nodes", clusterName)),
		Tags:                     iamTags(all),
	})
	if err != nil {
		return "", err
	}
	if adopted {
		owner := ""
		for _, t := range role.Tags {
			if aws.ToString(t.Key) == awsspec.TagCluster {
				owner = aws.ToString(t.Value)
			}
		}
		if owner != clusterName {
			return "", fmt.Errorf("IAM role %s exists and is not cluster %q's (tag %s = %q): give the cluster an iam_instance_profile or another name", name, clusterName, awsspec.TagCluster, owner)
		}
	}

	if err := putRolePolicy(ctx, c.iam, c.clock, name, ssmPolicyName, ssmReadPolicy(region, ssmPath)); err != nil {
		return "", err
	}
	switch {
	case extraPolicy != "":
		if err := putRolePolicy(ctx, c.iam, c.clock, name, nodePolicyName, extraPolicy); err != nil {
			return "", err
		}
	case adopted:
		_, err := c.iam.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String(name), PolicyName: aws.String(nodePolicyName)})
		if err != nil && !errCodeEquals(err, errCodeNoSuchEntity) {
			return "", fmt.Errorf("deleting inline policy %s of IAM role %s: %w", nodePolicyName, name, err)
		}
	}

	_, err = c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String(name),
		Path:                aws.String(iamPath),
		Tags:                iamTags(all),
	})
	if err != nil && !errCodeEquals(err, errCodeEntityAlreadyExists) {
		return "", fmt.Errorf("creating IAM instance profile %s: %w", name, err)
	}
	roles, err := wait.Retry(ctx, "IAM instance profile "+name+" to be readable", profilePropagationTimeout, c.clock,
		func(err error) bool { return errCodeEquals(err, errCodeNoSuchEntity) },
		func(ctx context.Context) ([]string, error) { return c.profileRoles(ctx, name) })
	if err != nil {
		return "", err
	}
	if !slices.Contains(roles, name) {
		in := &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(name)}
		_, err := wait.Retry(ctx, "IAM role "+name+" to join its instance profile", profilePropagationTimeout, c.clock,
			func(err error) bool { return errCodeEquals(err, errCodeNoSuchEntity, errCodeConcurrentModification) },
			func(ctx context.Context) (*iam.AddRoleToInstanceProfileOutput, error) {
				return c.iam.AddRoleToInstanceProfile(ctx, in)
			})
		// LimitExceeded (a profile holds one role) after a retry means the call IAM answered first was
		// applied and its answer lost (the SDK retries a 5xx or a dropped connection): the role is in.
		if err != nil && errCodeEquals(err, errCodeLimitExceeded) {
			if roles, rerr := c.profileRoles(ctx, name); rerr == nil && slices.Contains(roles, name) {
				err = nil
			}
		}
		if err != nil {
			return "", fmt.Errorf("adding IAM role %s to instance profile %s: %w", name, name, err)
		}
	}

	if err := c.waitProfileListsRole(ctx, name, name, profilePropagationTimeout); err != nil {
		return "", err
	}
	return name, nil
}

// States of an instance profile's role, as statusProfileRole reports them.
const (
	profileRoleListed  = "listed"
	profileRoleMissing = "missing"
)

// statusProfileRole reads for wait.For whether the instance profile lists the role.
func (c *Cloud) statusProfileRole(profile, role string) func(context.Context) ([]string, string, error) {
	return func(ctx context.Context) ([]string, string, error) {
		roles, err := c.profileRoles(ctx, profile)
		if err != nil || !slices.Contains(roles, role) {
			return roles, profileRoleMissing, err
		}
		return roles, profileRoleListed, nil
	}
}

// waitProfileListsRole waits until IAM shows the role in the instance profile, retrying while IAM does not
// show the profile yet.
func (c *Cloud) waitProfileListsRole(ctx context.Context, profile, role string, timeout time.Duration) error {
	_, err := wait.For(ctx, wait.Spec[[]string]{
		What:      fmt.Sprintf("IAM instance profile %s to list role %s", profile, role),
		Refresh:   c.statusProfileRole(profile, role),
		Retryable: func(err error) bool { return errCodeEquals(err, errCodeNoSuchEntity) },
		Pending:   []string{profileRoleMissing},
		Target:    []string{profileRoleListed},
		Timeout:   timeout,
		Clock:     c.clock,
	})
	return err
}

// DeleteInstanceProfile removes the role from the profile, deletes the profile, then the role with its
// policies; what is gone already is skipped.
func (c *Cloud) DeleteInstanceProfile(ctx context.Context, clusterName string) error {
	name := awsObjectName(clusterName)
	roles, err := c.profileRoles(ctx, name)
	switch {
	case err == nil:
		for _, role := range roles {
			_, err := c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
				InstanceProfileName: aws.String(name), RoleName: aws.String(role),
			})
			if err != nil && !errCodeEquals(err, errCodeNoSuchEntity) {
				return fmt.Errorf("removing IAM role %s from instance profile %s: %w", role, name, err)
			}
		}
		_, err = c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)})
		if err != nil && !errCodeEquals(err, errCodeNoSuchEntity) {
			return fmt.Errorf("deleting IAM instance profile %s: %w", name, err)
		}
	case !errCodeEquals(err, errCodeNoSuchEntity):
		return err
	}
	// Inline policies first, attached ones detached, DeleteConflict retried, a missing role skipped.
	if err := DeleteRole(ctx, c.iam, c.clock, name); err != nil {
		return err
	}
	return nil
}
