package awsclient

import (
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// Tags to and from each service's tag type. A request carries its tags sorted by key, so it is the same on
// every run; no tags is nil (the query protocols send an empty list otherwise).

// sortedTags is tags as a service's tags, built by tag from each key and value, sorted by key; nil for none.
func sortedTags[T any](tags map[string]string, tag func(key, value *string) T) []T {
	if len(tags) == 0 {
		return nil
	}
	out := make([]T, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, tag(aws.String(k), aws.String(tags[k])))
	}
	return out
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	return sortedTags(tags, func(k, v *string) ec2types.Tag { return ec2types.Tag{Key: k, Value: v} })
}

func iamTags(tags map[string]string) []iamtypes.Tag {
	return sortedTags(tags, func(k, v *string) iamtypes.Tag { return iamtypes.Tag{Key: k, Value: v} })
}

func elbTags(tags map[string]string) []elbv2types.Tag {
	return sortedTags(tags, func(k, v *string) elbv2types.Tag { return elbv2types.Tag{Key: k, Value: v} })
}

func ssmTags(tags map[string]string) []ssmtypes.Tag {
	return sortedTags(tags, func(k, v *string) ssmtypes.Tag { return ssmtypes.Tag{Key: k, Value: v} })
}

func s3Tags(tags map[string]string) []s3types.Tag {
	return sortedTags(tags, func(k, v *string) s3types.Tag { return s3types.Tag{Key: k, Value: v} })
}

// tagSpecs tags the objects of each type an EC2 call creates with tags (none when tags is empty).
func tagSpecs(tags map[string]string, types ...ec2types.ResourceType) []ec2types.TagSpecification {
	if len(tags) == 0 {
		return nil
	}
	out := make([]ec2types.TagSpecification, 0, len(types))
	for _, t := range types {
		out = append(out, ec2types.TagSpecification{ResourceType: t, Tags: ec2Tags(tags)})
	}
	return out
}

// tagMap is EC2's tags as a map.
func tagMap(tags []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// withClusterTag is tags plus the cluster tag.
func withClusterTag(tags map[string]string, clusterName string) map[string]string {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	out[awsspec.TagCluster] = clusterName
	return out
}
