package nodesim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// AdminPolicy allows every action: the simulator's own calls (the EC2 bridge, buckets, the tests' checks)
// under IAM enforcement.
const AdminPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`

// IAMUser is the IAM user whose key the simulator signs its own calls with once IAM is enforced; moto with
// MotoIAMFixes lets a user of this name assume the roles EC2 may, as EC2 does for an instance's profile.
const IAMUser = "nodesim"

// instanceCredentialSeconds is how long the credentials a node's instance role gets last (moto keeps them
// valid regardless; a node gets new ones at every boot).
const instanceCredentialSeconds = 3600

// EnforceIAM turns moto's IAM enforcement on for the rest of the run. It first makes an IAM user with an
// access key for each of users (user name -> policy document, the user's inline policy) and one for the
// simulator itself (every action allowed), which the simulator's own calls are signed as from then on
// (AWSConfig, InstanceEnv and the EC2 bridge's calls among them). From then on moto checks every request's
// signature and whether the caller's policies allow its action, and resources for S3 (moto checks no
// conditions, nor the actions AWS checks beside a call, such as iam:PassRole). An instance booted from
// then on acts as its instance profile's role, as on EC2: its processes get that role's credentials
// (sts:AssumeRole on moto), or none without a profile. It returns each user's credentials.
func (s *Sim) EnforceIAM(ctx context.Context, users map[string]string) (map[string]aws.Credentials, error) {
	if _, ok := users[IAMUser]; ok {
		return nil, fmt.Errorf("the IAM user %s is the simulator's own", IAMUser)
	}
	all := map[string]string{IAMUser: AdminPolicy}
	for u, doc := range users {
		all[u] = doc
	}
	out, err := CreateIAMUsers(ctx, iam.NewFromConfig(s.AWSConfig("us-east-1")), all)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.creds, s.enforced = out[IAMUser], true
	s.mu.Unlock()
	delete(out, IAMUser)
	status, body, err := s.awsRequest(ctx, http.MethodPost, "", "", "/moto-api/reset-auth", nil, []byte("0"))
	if err != nil {
		return nil, fmt.Errorf("turning moto's IAM enforcement on: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("turning moto's IAM enforcement on: HTTP %d %s", status, body)
	}
	s.logf("IAM enforced: the simulator signs as %s; %d other users", IAMUser, len(out))
	return out, nil
}

// CreateIAMUsers makes an IAM user in moto (through api) for each of users (user name -> policy document,
// the user's inline policy), with an access key, and returns each user's credentials.
func CreateIAMUsers(ctx context.Context, api *iam.Client, users map[string]string) (map[string]aws.Credentials, error) {
	out := map[string]aws.Credentials{}
	for _, user := range sortedKeys(users) {
		if _, err := api.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String(user)}); err != nil {
			return nil, fmt.Errorf("creating IAM user %s in moto: %w", user, err)
		}
		if _, err := api.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String(user), PolicyName: aws.String(user), PolicyDocument: aws.String(users[user])}); err != nil {
			return nil, fmt.Errorf("the policy of IAM user %s in moto: %w", user, err)
		}
		key, err := api.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String(user)})
		if err != nil {
			return nil, fmt.Errorf("an access key of IAM user %s in moto: %w", user, err)
		}
		out[user] = aws.Credentials{AccessKeyID: aws.ToString(key.AccessKey.AccessKeyId), SecretAccessKey: aws.ToString(key.AccessKey.SecretAccessKey)}
	}
	return out, nil
}

// credentials are what the simulator signs its own calls with: its IAM user's once IAM is enforced, else
// the fixed test key (moto takes any).
func (s *Sim) credentials() aws.Credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enforced {
		return s.creds
	}
	return aws.Credentials{AccessKeyID: awsAccessKeyID, SecretAccessKey: awsSecretAccessKey}
}

// iamEnforced says whether EnforceIAM ran.
func (s *Sim) iamEnforced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enforced
}

// instanceCredentials are what an instance with instance profile profileARN gets from its metadata
// service: credentials of the profile's role, for a session named after the instance. An instance without
// a profile gets none (empty credentials).
func (s *Sim) instanceCredentials(ctx context.Context, region, profileARN, instanceID string) (aws.Credentials, error) {
	if profileARN == "" {
		return aws.Credentials{}, nil
	}
	name := profileARN[strings.LastIndex(profileARN, "/")+1:]
	cfg := s.AWSConfig(region)
	prof, err := iam.NewFromConfig(cfg).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("reading instance profile %s: %w", name, err)
	}
	if len(prof.InstanceProfile.Roles) == 0 {
		return aws.Credentials{}, errors.New("instance profile " + name + " has no role: the instance gets no credentials from it")
	}
	role := aws.ToString(prof.InstanceProfile.Roles[0].Arn)
	out, err := sts.NewFromConfig(cfg).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String(instanceID),
		DurationSeconds: aws.Int32(instanceCredentialSeconds)})
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("assuming %s for instance %s: %w", role, instanceID, err)
	}
	c := out.Credentials
	return aws.Credentials{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey), SessionToken: aws.ToString(c.SessionToken)}, nil
}

// instanceEnv is what a node's processes get from an instance role with creds (as systemd's manager
// environment): the AWS SDK's and CLI's variables, and pgBackRest's shared keys in place of the instance
// metadata service (PGBACKREST_* environment options override pgbackrest.conf's repo1-s3-key-type=auto).
// Empty credentials give no keys.
func instanceEnv(creds aws.Credentials) []string {
	env := []string{"AWS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt", "AWS_EC2_METADATA_DISABLED=true"}
	if creds.AccessKeyID == "" {
		return env
	}
	env = append(env,
		"AWS_ACCESS_KEY_ID="+creds.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey,
		"PGBACKREST_REPO1_S3_KEY_TYPE=shared",
		"PGBACKREST_REPO1_S3_KEY="+creds.AccessKeyID,
		"PGBACKREST_REPO1_S3_KEY_SECRET="+creds.SecretAccessKey)
	if creds.SessionToken != "" {
		env = append(env, "AWS_SESSION_TOKEN="+creds.SessionToken, "PGBACKREST_REPO1_S3_TOKEN="+creds.SessionToken)
	}
	return env
}
