package awsclient

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// ApplyGuards makes the live bucket match g. The public access block and ownership controls go first (so the
// bucket is never open while the rest is applied), then versioning (replication needs it), then default
// encryption, lifecycle, policy and replication. Zero values remove a configuration where S3 allows it:
// no ownership, no encryption, no lifecycle rules, no policy, no replication. Versioning "" leaves versioning
// as it is: S3 cannot return a bucket to "never versioned".
func ApplyGuards(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	steps := []func(context.Context, S3API, wait.Clock, string, archive.Guards) error{
		applyPublicAccessBlock,
		applyOwnership,
		applyVersioning,
		applyEncryption,
		applyLifecycle,
		applyPolicy,
		applyReplication,
	}
	for _, step := range steps {
		if err := step(ctx, api, clock, bucket, g); err != nil {
			return err
		}
	}
	return nil
}

func applyPublicAccessBlock(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	p := g.PublicAccessBlock
	in := &s3.PutPublicAccessBlockInput{
		Bucket: aws.String(bucket),
		PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{
			BlockPublicAcls:       aws.Bool(p.BlockPublicAcls),
			IgnorePublicAcls:      aws.Bool(p.IgnorePublicAcls),
			BlockPublicPolicy:     aws.Bool(p.BlockPublicPolicy),
			RestrictPublicBuckets: aws.Bool(p.RestrictPublicBuckets),
		},
	}
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutPublicAccessBlockOutput, error) {
		return api.PutPublicAccessBlock(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("putting the public access block of S3 bucket %q: %w", bucket, err)
	}
	return nil
}

func applyOwnership(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	if g.ObjectOwnership == "" {
		_, err := api.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeOwnershipControlsNotFound) {
			return fmt.Errorf("deleting the ownership controls of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	in := &s3.PutBucketOwnershipControlsInput{
		Bucket: aws.String(bucket),
		OwnershipControls: &s3types.OwnershipControls{Rules: []s3types.OwnershipControlsRule{
			{ObjectOwnership: s3types.ObjectOwnership(g.ObjectOwnership)},
		}},
	}
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketOwnershipControlsOutput, error) {
		return api.PutBucketOwnershipControls(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("putting the ownership controls (%s) of S3 bucket %q: %w", g.ObjectOwnership, bucket, err)
	}
	return nil
}

func applyVersioning(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	if g.Versioning == "" {
		return nil
	}
	in := &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatus(g.Versioning)},
	}
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketVersioningOutput, error) {
		return api.PutBucketVersioning(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("setting versioning of S3 bucket %q to %s: %w", bucket, g.Versioning, err)
	}
	return nil
}

func applyEncryption(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	e := g.Encryption
	if e.Algorithm == "" {
		// On AWS this returns the bucket to its default (SSE-S3): every bucket is encrypted since 2023.
		_, err := api.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeServerSideEncryptionConfigNotFound) {
			return fmt.Errorf("deleting the default encryption of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	def := &s3types.ServerSideEncryptionByDefault{SSEAlgorithm: s3types.ServerSideEncryption(e.Algorithm)}
	if e.KMSKeyARN != "" {
		def.KMSMasterKeyID = aws.String(e.KMSKeyARN)
	}
	in := &s3.PutBucketEncryptionInput{
		Bucket: aws.String(bucket),
		ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
			ApplyServerSideEncryptionByDefault: def,
			BucketKeyEnabled:                   aws.Bool(e.BucketKey),
		}}},
	}
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketEncryptionOutput, error) {
		return api.PutBucketEncryption(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("putting the default encryption (%s) of S3 bucket %q: %w", e.Algorithm, bucket, err)
	}
	return nil
}

func applyPolicy(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	if g.PolicyJSON == "" {
		_, err := api.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeNoSuchBucketPolicy) {
			return fmt.Errorf("deleting the policy of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	in := &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(g.PolicyJSON)}
	// Right after the bucket and its public access block, S3 may still answer OperationAborted (a conflicting
	// change is in progress), NoSuchBucket, or MalformedPolicy while a principal propagates: retry those.
	_, err := retryWhenCode(ctx, clock, policyRaceTimeout, func(ctx context.Context) (*s3.PutBucketPolicyOutput, error) {
		return api.PutBucketPolicy(ctx, in)
	}, errCodeOperationAborted, errCodeNoSuchBucket, errCodeMalformedPolicy)
	if err != nil {
		return fmt.Errorf("putting the policy of S3 bucket %q: %w", bucket, err)
	}
	return nil
}

// ReadGuards reads the guarded configuration of bucket. Configurations S3 reports as absent read as zero
// values. A missing bucket is ErrBucketNotFound (wrapped).
func ReadGuards(ctx context.Context, api S3API, bucket string) (archive.Guards, error) {
	var g archive.Guards
	b := aws.String(bucket)

	ver, err := api.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b})
	if err != nil {
		return g, readErr(err, bucket, "versioning")
	}
	g.Versioning = string(ver.Status)

	pab, err := api.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeNoSuchPublicAccessBlock):
	case err != nil:
		return g, readErr(err, bucket, "public access block")
	case pab.PublicAccessBlockConfiguration != nil:
		c := pab.PublicAccessBlockConfiguration
		g.PublicAccessBlock = archive.PublicAccessBlock{
			BlockPublicAcls:       aws.ToBool(c.BlockPublicAcls),
			IgnorePublicAcls:      aws.ToBool(c.IgnorePublicAcls),
			BlockPublicPolicy:     aws.ToBool(c.BlockPublicPolicy),
			RestrictPublicBuckets: aws.ToBool(c.RestrictPublicBuckets),
		}
	}

	own, err := api.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeOwnershipControlsNotFound):
	case err != nil:
		return g, readErr(err, bucket, "ownership controls")
	case own.OwnershipControls != nil && len(own.OwnershipControls.Rules) > 0:
		g.ObjectOwnership = string(own.OwnershipControls.Rules[0].ObjectOwnership)
	}

	enc, err := api.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeServerSideEncryptionConfigNotFound):
	case err != nil:
		return g, readErr(err, bucket, "default encryption")
	case enc.ServerSideEncryptionConfiguration != nil && len(enc.ServerSideEncryptionConfiguration.Rules) > 0:
		rule := enc.ServerSideEncryptionConfiguration.Rules[0]
		if d := rule.ApplyServerSideEncryptionByDefault; d != nil {
			g.Encryption.Algorithm = string(d.SSEAlgorithm)
			g.Encryption.KMSKeyARN = aws.ToString(d.KMSMasterKeyID)
		}
		g.Encryption.BucketKey = aws.ToBool(rule.BucketKeyEnabled)
	}

	if g.Lifecycle, err = readLifecycle(ctx, api, bucket); err != nil {
		return g, err
	}

	pol, err := api.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeNoSuchBucketPolicy):
	case err != nil:
		return g, readErr(err, bucket, "policy")
	default:
		g.PolicyJSON = aws.ToString(pol.Policy)
	}

	rep, err := api.GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeReplicationConfigurationNotFound):
	case err != nil:
		return g, readErr(err, bucket, "replication configuration")
	default:
		g.Replication = replicationFromS3(rep.ReplicationConfiguration)
	}
	return g, nil
}
