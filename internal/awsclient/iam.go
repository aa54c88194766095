package awsclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// IAMAPI is the part of *iam.Client the adapter uses to manage the archive's replication role. Tests fake it.
type IAMAPI interface {
	CreateRole(ctx context.Context, in *iam.CreateRoleInput, optFns ...func(*iam.Options)) (*iam.CreateRoleOutput, error)
	GetRole(ctx context.Context, in *iam.GetRoleInput, optFns ...func(*iam.Options)) (*iam.GetRoleOutput, error)
	UpdateAssumeRolePolicy(ctx context.Context, in *iam.UpdateAssumeRolePolicyInput, optFns ...func(*iam.Options)) (*iam.UpdateAssumeRolePolicyOutput, error)
	DeleteRole(ctx context.Context, in *iam.DeleteRoleInput, optFns ...func(*iam.Options)) (*iam.DeleteRoleOutput, error)

	PutRolePolicy(ctx context.Context, in *iam.PutRolePolicyInput, optFns ...func(*iam.Options)) (*iam.PutRolePolicyOutput, error)
	ListRolePolicies(ctx context.Context, in *iam.ListRolePoliciesInput, optFns ...func(*iam.Options)) (*iam.ListRolePoliciesOutput, error)
	DeleteRolePolicy(ctx context.Context, in *iam.DeleteRolePolicyInput, optFns ...func(*iam.Options)) (*iam.DeleteRolePolicyOutput, error)
	ListAttachedRolePolicies(ctx context.Context, in *iam.ListAttachedRolePoliciesInput, optFns ...func(*iam.Options)) (*iam.ListAttachedRolePoliciesOutput, error)
	DetachRolePolicy(ctx context.Context, in *iam.DetachRolePolicyInput, optFns ...func(*iam.Options)) (*iam.DetachRolePolicyOutput, error)

	ListRoleTags(ctx context.Context, in *iam.ListRoleTagsInput, optFns ...func(*iam.Options)) (*iam.ListRoleTagsOutput, error)
	TagRole(ctx context.Context, in *iam.TagRoleInput, optFns ...func(*iam.Options)) (*iam.TagRoleOutput, error)
	UntagRole(ctx context.Context, in *iam.UntagRoleInput, optFns ...func(*iam.Options)) (*iam.UntagRoleOutput, error)
}

var _ IAMAPI = (*iam.Client)(nil)

// ErrRoleNotFound means the IAM role does not exist. FindRole wraps it, so test with errors.Is.
var ErrRoleNotFound = errors.New("role not found")

// IAM error codes the adapter reacts to by name.
const (
	errCodeConcurrentModification = "ConcurrentModification"
	errCodeDeleteConflict         = "DeleteConflict"
	errCodeEntityAlreadyExists    = "EntityAlreadyExists"
	errCodeLimitExceeded          = "LimitExceeded"
	errCodeNoSuchEntity           = "NoSuchEntity"
)

// iamPropagationTimeout bounds retries while IAM, which is eventually consistent, does not yet show a role
// just created, or still shows a policy just removed.
const iamPropagationTimeout = 2 * time.Minute

// FindRole returns the ARN of the role called name, or ErrRoleNotFound (wrapped).
func FindRole(ctx context.Context, api IAMAPI, name string) (string, error) {
	role, err := findRole(ctx, api, name)
	if err != nil {
		return "", err
	}
	return aws.ToString(role.Arn), nil
}

// findRole reads the role called name, or ErrRoleNotFound (wrapped).
func findRole(ctx context.Context, api IAMAPI, name string) (*iamtypes.Role, error) {
	out, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
	if errCodeEquals(err, errCodeNoSuchEntity) {
		return nil, fmt.Errorf("IAM role %q: %w", name, ErrRoleNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading IAM role %q: %w", name, err)
	}
	if out.Role == nil {
		return nil, fmt.Errorf("reading IAM role %q: empty answer", name)
	}
	return out.Role, nil
}

// createRole creates the role in describes. When a role of that name exists already (an interrupted apply
// created it, or someone else did) it returns that role with existed set, for the caller to adopt or refuse.
func createRole(ctx context.Context, api IAMAPI, in *iam.CreateRoleInput) (role *iamtypes.Role, existed bool, err error) {
	name := aws.ToString(in.RoleName)
	out, err := api.CreateRole(ctx, in)
	switch {
	case err == nil:
		if out.Role == nil {
			return nil, false, fmt.Errorf("creating IAM role %q: empty answer", name)
		}
		return out.Role, false, nil
	case errCodeEquals(err, errCodeEntityAlreadyExists):
		role, err := findRole(ctx, api, name)
		return role, true, err
	default:
		return nil, false, fmt.Errorf("creating IAM role %q: %w", name, err)
	}
}

// putRolePolicy puts the inline policy on role, retrying on clock while IAM does not show a role just
// created (NoSuchEntity) or is busy with another change to it (ConcurrentModification).
func putRolePolicy(ctx context.Context, api IAMAPI, clock wait.Clock, role, policy, document string) error {
	in := &iam.PutRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(policy), PolicyDocument: aws.String(document)}
	_, err := wait.Retry(ctx, "IAM role "+role+" to accept policy "+policy, iamPropagationTimeout, clock,
		func(err error) bool { return errCodeEquals(err, errCodeNoSuchEntity, errCodeConcurrentModification) },
		func(ctx context.Context) (*iam.PutRolePolicyOutput, error) { return api.PutRolePolicy(ctx, in) })
	if err != nil {
		return fmt.Errorf("putting inline policy %q on IAM role %q: %w", policy, role, err)
	}
	return nil
}

// EnsureRole creates the role called name with the trust policy trustJSON, or updates the trust policy of the
// existing role; then puts its inline policy policyName (policyJSON) and makes its tags exactly tags. It
// returns the role's ARN and is safe to call again after an interrupted apply. Inline policies of other names
// and attached managed policies are left alone.
func EnsureRole(ctx context.Context, api IAMAPI, clock wait.Clock, name, trustJSON, policyName, policyJSON string, tags map[string]string) (string, error) {
	role, existed, err := createRole(ctx, api, &iam.CreateRoleInput{
		RoleName:                 aws.String(name),
		AssumeRolePolicyDocument: aws.String(trustJSON),
		Tags:                     iamTags(tags),
	})
	if err != nil {
		return "", err
	}
	if existed {
		if _, err := api.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{
			RoleName:       aws.String(name),
			PolicyDocument: aws.String(trustJSON),
		}); err != nil {
			return "", fmt.Errorf("updating the trust policy of IAM role %q: %w", name, err)
		}
		if err := syncRoleTags(ctx, api, name, tags); err != nil {
			return "", err
		}
	}
	if err := putRolePolicy(ctx, api, clock, name, policyName, policyJSON); err != nil {
		return "", err
	}
	return aws.ToString(role.Arn), nil
}

// syncRoleTags makes the role's tags exactly tags: it removes keys not in tags and sets the rest.
func syncRoleTags(ctx context.Context, api IAMAPI, name string, tags map[string]string) error {
	have := map[string]string{}
	var marker *string
	for {
		out, err := api.ListRoleTags(ctx, &iam.ListRoleTagsInput{RoleName: aws.String(name), Marker: marker})
		if err != nil {
			return fmt.Errorf("listing the tags of IAM role %q: %w", name, err)
		}
		for _, t := range out.Tags {
			have[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if !out.IsTruncated || out.Marker == nil {
			break
		}
		marker = out.Marker
	}
	var stale []string
	for k := range have {
		if _, ok := tags[k]; !ok {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		if _, err := api.UntagRole(ctx, &iam.UntagRoleInput{RoleName: aws.String(name), TagKeys: stale}); err != nil {
			return fmt.Errorf("removing tags %v from IAM role %q: %w", stale, name, err)
		}
	}
	if len(tags) > 0 && !maps.Equal(have, tags) {
		if _, err := api.TagRole(ctx, &iam.TagRoleInput{RoleName: aws.String(name), Tags: iamTags(tags)}); err != nil {
			return fmt.Errorf("tagging IAM role %q: %w", name, err)
		}
	}
	return nil
}

// DeleteRole deletes the role called name after removing its inline policies and detaching its managed
// policies (IAM refuses to delete a role that has any). A role that is already gone counts as deleted.
func DeleteRole(ctx context.Context, api IAMAPI, clock wait.Clock, name string) error {
	policies, err := listRolePolicyNames(ctx, api, name)
	if errCodeEquals(err, errCodeNoSuchEntity) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing the inline policies of IAM role %q: %w", name, err)
	}
	for _, p := range policies {
		_, err := api.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String(name), PolicyName: aws.String(p)})
		if err != nil && !errCodeEquals(err, errCodeNoSuchEntity) {
			return fmt.Errorf("deleting inline policy %q of IAM role %q: %w", p, name, err)
		}
	}

	attached, err := listAttachedRolePolicyARNs(ctx, api, name)
	if errCodeEquals(err, errCodeNoSuchEntity) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing the managed policies attached to IAM role %q: %w", name, err)
	}
	for _, p := range attached {
		_, err := api.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String(name), PolicyArn: aws.String(p)})
		if err != nil && !errCodeEquals(err, errCodeNoSuchEntity) {
			return fmt.Errorf("detaching policy %s from IAM role %q: %w", p, name, err)
		}
	}

	// IAM may still see a policy just removed: DeleteConflict then is eventual consistency, not a real conflict.
	_, err = retryWhenCode(ctx, clock, iamPropagationTimeout, func(ctx context.Context) (*iam.DeleteRoleOutput, error) {
		return api.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String(name)})
	}, errCodeDeleteConflict, errCodeConcurrentModification)
	if err != nil && !errCodeEquals(err, errCodeNoSuchEntity) {
		return fmt.Errorf("deleting IAM role %q: %w", name, err)
	}
	return nil
}

func listRolePolicyNames(ctx context.Context, api IAMAPI, name string) ([]string, error) {
	var names []string
	var marker *string
	for {
		out, err := api.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(name), Marker: marker})
		if err != nil {
			return nil, err
		}
		names = append(names, out.PolicyNames...)
		if !out.IsTruncated || out.Marker == nil {
			return names, nil
		}
		marker = out.Marker
	}
}

func listAttachedRolePolicyARNs(ctx context.Context, api IAMAPI, name string) ([]string, error) {
	var arns []string
	var marker *string
	for {
		out, err := api.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(name), Marker: marker})
		if err != nil {
			return nil, err
		}
		for _, p := range out.AttachedPolicies {
			arns = append(arns, aws.ToString(p.PolicyArn))
		}
		if !out.IsTruncated || out.Marker == nil {
			return arns, nil
		}
		marker = out.Marker
	}
}
