package awsclient_test

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

const (
	testTrust = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	// testTrust2 adds the batch operations principal, so an update is visible.
	testTrust2  = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":["s3.amazonaws.com","batchoperations.s3.amazonaws.com"]},"Action":"sts:AssumeRole"}]}`
	testPolicy  = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ReplicateObject","Resource":"arn:aws:s3:::tf-acc-replica/*"}]}`
	testPolicy2 = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ReplicateObject","s3:ReplicateDelete"],"Resource":"arn:aws:s3:::tf-acc-replica/*"}]}`
)

// iamDocument decodes a policy document as IAM returns it (URL-encoded JSON).
func iamDocument(t *testing.T, doc *string) string {
	t.Helper()
	s, err := url.QueryUnescape(aws.ToString(doc))
	if err != nil {
		t.Fatalf("decoding policy document %q: %v", aws.ToString(doc), err)
	}
	return s
}

func roleTags(t *testing.T, api *iam.Client, name string) map[string]string {
	t.Helper()
	out, err := api.ListRoleTags(context.Background(), &iam.ListRoleTagsInput{RoleName: aws.String(name)})
	if err != nil {
		t.Fatalf("ListRoleTags: %v", err)
	}
	tags := map[string]string{}
	for _, tag := range out.Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	return tags
}

func checkRole(t *testing.T, api *iam.Client, name, trust, policy string, tags map[string]string) {
	t.Helper()
	ctx := context.Background()
	role, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetRole: %v", err)
	}
	if got := iamDocument(t, role.Role.AssumeRolePolicyDocument); !jsonEqual(t, got, trust) {
		t.Errorf("trust policy = %s; want %s", got, trust)
	}
	pol, err := api.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(name), PolicyName: aws.String("replication")})
	if err != nil {
		t.Fatalf("GetRolePolicy: %v", err)
	}
	if got := iamDocument(t, pol.PolicyDocument); !jsonEqual(t, got, policy) {
		t.Errorf("inline policy = %s; want %s", got, policy)
	}
	names, err := api.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(name)})
	if err != nil || !slices.Equal(names.PolicyNames, []string{"replication"}) {
		t.Errorf("inline policies = %v, %v; want [replication]", names.PolicyNames, err)
	}
	if got := roleTags(t, api, name); !reflect.DeepEqual(got, tags) {
		t.Errorf("tags = %v; want %v", got, tags)
	}
}

func TestRole_moto(t *testing.T) {
	t.Parallel()
	api := motoIAM(startArchiveMoto(t))
	ctx := context.Background()
	const name = "tf-acc-archive-replication"

	if _, err := awsclient.FindRole(ctx, api, name); !errors.Is(err, awsclient.ErrRoleNotFound) {
		t.Fatalf("FindRole(missing) = %v; want ErrRoleNotFound", err)
	}

	tags := map[string]string{"env": "tf-acc", "team": "db"}
	arn, err := awsclient.EnsureRole(ctx, api, wait.Real, name, testTrust, "replication", testPolicy, tags)
	if err != nil {
		t.Fatalf("EnsureRole (create): %v", err)
	}
	if !strings.HasPrefix(arn, "arn:aws:iam::") || !strings.HasSuffix(arn, ":role/"+name) {
		t.Fatalf("EnsureRole ARN = %q", arn)
	}
	checkRole(t, api, name, testTrust, testPolicy, tags)
	if got, err := awsclient.FindRole(ctx, api, name); err != nil || got != arn {
		t.Fatalf("FindRole = %q, %v; want %q", got, err, arn)
	}

	// Re-applying the same role is a no-op; a changed one is updated in place (same ARN).
	if again, err := awsclient.EnsureRole(ctx, api, wait.Real, name, testTrust, "replication", testPolicy, tags); err != nil || again != arn {
		t.Fatalf("EnsureRole (same) = %q, %v; want %q", again, err, arn)
	}
	checkRole(t, api, name, testTrust, testPolicy, tags)
	tags2 := map[string]string{"env": "prod", "owner": "platform"}
	if again, err := awsclient.EnsureRole(ctx, api, wait.Real, name, testTrust2, "replication", testPolicy2, tags2); err != nil || again != arn {
		t.Fatalf("EnsureRole (changed) = %q, %v; want %q", again, err, arn)
	}
	checkRole(t, api, name, testTrust2, testPolicy2, tags2)
	if _, err := awsclient.EnsureRole(ctx, api, wait.Real, name, testTrust2, "replication", testPolicy2, nil); err != nil {
		t.Fatalf("EnsureRole (no tags): %v", err)
	}
	if got := roleTags(t, api, name); len(got) != 0 {
		t.Fatalf("tags after EnsureRole without tags = %v; want none", got)
	}

	// A managed policy attached by someone else does not stop DeleteRole.
	pol, err := api.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: aws.String("tf-acc-extra"), PolicyDocument: aws.String(testPolicy)})
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	if _, err := api.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String(name), PolicyArn: pol.Policy.Arn}); err != nil {
		t.Fatalf("AttachRolePolicy: %v", err)
	}

	if err := awsclient.DeleteRole(ctx, api, wait.Real, name); err != nil {
		t.Fatalf("DeleteRole: %v", err)
	}
	if _, err := awsclient.FindRole(ctx, api, name); !errors.Is(err, awsclient.ErrRoleNotFound) {
		t.Fatalf("FindRole(deleted) = %v; want ErrRoleNotFound", err)
	}
	if err := awsclient.DeleteRole(ctx, api, wait.Real, name); err != nil {
		t.Fatalf("DeleteRole(already gone) = %v; want success", err)
	}
}

// fakeIAM makes the first PutRolePolicy after CreateRole fail with NoSuchEntity, as IAM does while a new
// role propagates (moto is consistent at once); with neverPropagates every one fails.
type fakeIAM struct {
	awsclient.IAMAPI
	putCalls        int
	neverPropagates bool
}

func (f *fakeIAM) CreateRole(_ context.Context, in *iam.CreateRoleInput, _ ...func(*iam.Options)) (*iam.CreateRoleOutput, error) {
	return &iam.CreateRoleOutput{Role: &iamtypes.Role{RoleName: in.RoleName, Arn: aws.String("arn:aws:iam::123456789012:role/" + aws.ToString(in.RoleName))}}, nil
}

func (f *fakeIAM) PutRolePolicy(context.Context, *iam.PutRolePolicyInput, ...func(*iam.Options)) (*iam.PutRolePolicyOutput, error) {
	f.putCalls++
	if f.putCalls == 1 || f.neverPropagates {
		return nil, &smithy.GenericAPIError{Code: "NoSuchEntity", Message: "The role with name r cannot be found."}
	}
	return &iam.PutRolePolicyOutput{}, nil
}

func TestEnsureRole_propagation_fake(t *testing.T) {
	t.Parallel()
	// The retry waits on the clock given, which advances at once: no real time passes.
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeIAM{}
	clock := wait.NewStepClock(t0)
	arn, err := awsclient.EnsureRole(context.Background(), f, clock, "r", testTrust, "replication", testPolicy, nil)
	if err != nil || arn != "arn:aws:iam::123456789012:role/r" {
		t.Fatalf("EnsureRole = %q, %v", arn, err)
	}
	if f.putCalls != 2 {
		t.Fatalf("PutRolePolicy calls = %d; want 2 (NoSuchEntity retried once)", f.putCalls)
	}
	if want := []time.Duration{wait.DefaultMinInterval}; !slices.Equal(clock.Sleeps, want) {
		t.Errorf("waited %v before the retry; want %v", clock.Sleeps, want)
	}

	// A role IAM never shows: the retries stop at the propagation timeout (two minutes) on that clock, and
	// IAM's own error comes back.
	f = &fakeIAM{neverPropagates: true}
	clock = wait.NewStepClock(t0)
	_, err = awsclient.EnsureRole(context.Background(), f, clock, "r", testTrust, "replication", testPolicy, nil)
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "NoSuchEntity" || !strings.Contains(err.Error(), `putting inline policy "replication" on IAM role "r"`) {
		t.Fatalf("EnsureRole on a role that never propagates = %v; want NoSuchEntity", err)
	}
	if gave := clock.Now().Sub(t0); gave != 2*time.Minute {
		t.Errorf("gave up after %s on the clock (%d calls); want the 2m propagation timeout", gave, f.putCalls)
	}
	t.Logf("gave up after %d calls, %s on the clock", f.putCalls, clock.Now().Sub(t0))
}
