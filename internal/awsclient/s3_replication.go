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

func applyReplication(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	r := g.Replication
	if r == nil {
		_, err := api.DeleteBucketReplication(ctx, &s3.DeleteBucketReplicationInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeReplicationConfigurationNotFound) {
			return fmt.Errorf("deleting the replication configuration of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	status := s3types.ReplicationRuleStatusDisabled
	if r.Enabled {
		status = s3types.ReplicationRuleStatusEnabled
	}
	markers := s3types.DeleteMarkerReplicationStatusDisabled
	if r.DeleteMarkers {
		markers = s3types.DeleteMarkerReplicationStatusEnabled
	}
	dest := &s3types.Destination{Bucket: aws.String(r.DestinationBucketARN)}
	if r.StorageClass != "" {
		dest.StorageClass = s3types.StorageClass(r.StorageClass)
	}
	rule := s3types.ReplicationRule{
		ID:                      aws.String(r.RuleID),
		Priority:                aws.Int32(1),
		Status:                  status,
		Filter:                  &s3types.ReplicationRuleFilter{Prefix: aws.String("")},
		DeleteMarkerReplication: &s3types.DeleteMarkerReplication{Status: markers},
		Destination:             dest,
	}
	if r.ReplicaKMSKeyARN != "" {
		dest.EncryptionConfiguration = &s3types.EncryptionConfiguration{ReplicaKmsKeyID: aws.String(r.ReplicaKMSKeyARN)}
		rule.SourceSelectionCriteria = &s3types.SourceSelectionCriteria{
			SseKmsEncryptedObjects: &s3types.SseKmsEncryptedObjects{Status: s3types.SseKmsEncryptedObjectsStatusEnabled},
		}
	}
	in := &s3.PutBucketReplicationInput{
		Bucket: aws.String(bucket),
		ReplicationConfiguration: &s3types.ReplicationConfiguration{
			Role:  aws.String(r.RoleARN),
			Rules: []s3types.ReplicationRule{rule},
		},
	}
	// Versioning just enabled on the source or the replica may not be visible yet.
	_, err := retryWhen(ctx, clock, bucketPropagationTimeout, func(err error) bool {
		return errCodeEquals(err, errCodeNoSuchBucket, errCodeOperationAborted) ||
			errMessageContains(err, errCodeInvalidRequest, "Versioning must be 'Enabled'")
	}, func(ctx context.Context) (*s3.PutBucketReplicationOutput, error) {
		return api.PutBucketReplication(ctx, in)
	})
	if err != nil {
		return fmt.Errorf("putting the replication configuration of S3 bucket %q (to %s): %w", bucket, r.DestinationBucketARN, err)
	}
	return nil
}

// replicationFromS3 reduces the first rule of a replication configuration to the model. The archive writes
// exactly one rule; extra rules are not described.
func replicationFromS3(c *s3types.ReplicationConfiguration) *archive.Replication {
	if c == nil || len(c.Rules) == 0 {
		return nil
	}
	rule := c.Rules[0]
	r := &archive.Replication{
		RoleARN: aws.ToString(c.Role),
		RuleID:  aws.ToString(rule.ID),
		Enabled: rule.Status == s3types.ReplicationRuleStatusEnabled,
	}
	if d := rule.Destination; d != nil {
		r.DestinationBucketARN = aws.ToString(d.Bucket)
		r.StorageClass = string(d.StorageClass)
		if d.EncryptionConfiguration != nil {
			r.ReplicaKMSKeyARN = aws.ToString(d.EncryptionConfiguration.ReplicaKmsKeyID)
		}
	}
	if m := rule.DeleteMarkerReplication; m != nil {
		r.DeleteMarkers = m.Status == s3types.DeleteMarkerReplicationStatusEnabled
	}
	return r
}
