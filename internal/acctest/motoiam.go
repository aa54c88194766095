package acctest

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// AdminPolicy allows every action: the test's own arranging and checking under IAM enforcement.
const AdminPolicy = nodesim.AdminPolicy

// EnforceIAM makes an IAM user with an access key for each of policies (user name -> policy document, as
// the user's inline policy), then turns moto's IAM enforcement on: from then on moto checks every
// request's signature against the keys it issued and its action against the caller's policies, and refuses
// the others with AccessDenied ("... is not authorized to perform: <action>"). It returns each user's
// credentials. moto checks actions, and resources for S3 and (with nodesim.MotoIAMFixes) SSM; it does not
// check conditions, nor the actions AWS checks beside a call (iam:PassRole, tagging at create).
func (m *Moto) EnforceIAM(t testing.TB, region string, policies map[string]string) map[string]aws.Credentials {
	t.Helper()
	out, err := nodesim.CreateIAMUsers(context.Background(), iam.NewFromConfig(m.AWSConfig(region)), policies)
	if err != nil {
		t.Fatal(err)
	}
	m.resetAuth(t, "0")
	return out
}

// resetAuth sets how many more requests moto serves before it enforces IAM (moto-api/reset-auth).
func (m *Moto) resetAuth(t testing.TB, count string) {
	t.Helper()
	resp, err := http.Post(m.URL+"/moto-api/reset-auth", "text/plain", strings.NewReader(count))
	if err != nil {
		t.Fatalf("turning moto's IAM enforcement on: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("turning moto's IAM enforcement on: HTTP %d %s", resp.StatusCode, body)
	}
}

// ConfigAs is AWSConfig signed with creds (a user EnforceIAM made).
func (m *Moto) ConfigAs(region string, creds aws.Credentials) aws.Config {
	cfg := m.AWSConfig(region)
	cfg.Credentials = credentials.StaticCredentialsProvider{Value: creds}
	return cfg
}

// motoS3Names are the S3 actions moto checks under names of its own (moto/s3/responses.py ACTION_MAP),
// by the action AWS checks for the same request. (moto also checks an unlisted bucket subresource as the
// method's default: PUT ?encryption as s3:CreateBucket, GET ?replication as s3:ListBucket; those pass with
// the published policy whatever it says of encryption or replication.)
var motoS3Names = map[string]string{
	"s3:HeadBucket":              "s3:ListBucket",
	"s3:GetPublicAccessBlock":    "s3:GetBucketPublicAccessBlock",
	"s3:PutPublicAccessBlock":    "s3:PutBucketPublicAccessBlock",
	"s3:DeletePublicAccessBlock": "s3:PutBucketPublicAccessBlock",
}

// PolicyOnMoto is policy (a policy document whose statements list their actions) plus a statement of moto's
// name for each S3 action of it that moto names otherwise (motoS3Names), so that moto checks what AWS would.
func PolicyOnMoto(t testing.TB, policy string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		t.Fatal(err)
	}
	var actions []any
	for _, st := range doc["Statement"].([]any) {
		if a, ok := st.(map[string]any)["Action"].([]any); ok {
			actions = append(actions, a...)
		}
	}
	var names []any
	for _, moto := range slices.Sorted(maps.Keys(motoS3Names)) {
		if slices.Contains(actions, any(motoS3Names[moto])) {
			names = append(names, moto)
		}
	}
	doc["Statement"] = append(doc["Statement"].([]any), map[string]any{"Sid": "MotoNames", "Effect": "Allow", "Action": names, "Resource": "*"})
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// PolicyWithout is policy (a policy document) with action taken out of every statement; an action the
// policy does not name fails the test.
func PolicyWithout(t testing.TB, policy, action string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range doc["Statement"].([]any) {
		s := st.(map[string]any)
		var kept []any
		for _, a := range s["Action"].([]any) {
			if a == action {
				found = true
				continue
			}
			kept = append(kept, a)
		}
		s["Action"] = kept
	}
	if !found {
		t.Fatalf("%s is not in the policy", action)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
