package awsspec

import (
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// Warnings are the aws block's warnings in the context of s (cluster.Warner).
//
// A restore's source is read by the nodes with their instance role. When the platform creates that role
// (no iam_instance_profile), its permissions are the SSM read the platform adds and node_policy_json: if no
// statement of node_policy_json can allow listing the source's bucket under each of its key prefixes or
// reading an object under each (archive.MayGrantIn, which errs towards yes but for the listing's prefix), the nodes most likely cannot restore, and
// the apply would only find out when its wait for a leader times out. It is a warning, not an error: a
// bucket policy on the source may grant the role what its own policy does not.
func (a *Block) Warnings(s cluster.Spec) []*cluster.FieldError {
	if a == nil || s.Restore == nil || a.IAMInstanceProfile != "" {
		return nil
	}
	from, ok := s.RestoreLocation()
	if !ok || from.Bucket == "" {
		return nil
	}
	// Each call the restore makes: the action, a resource it is made on (for an object, a name either
	// archiver could have under the key prefix), and the resource as the warning names it.
	// A listing is made under each key prefix (its s3:prefix condition key).
	type call struct {
		action, resource, shown string
		keys                    map[string]string
	}
	bucket := "arn:aws:s3:::" + from.Bucket
	var calls []call
	for _, k := range from.Keys {
		calls = append(calls, call{"s3:ListBucket", bucket, bucket + " (prefix " + k + ")", map[string]string{"s3:prefix": k}})
	}
	for _, k := range from.Keys {
		calls = append(calls, call{"s3:GetObject", bucket + "/" + k + "pgnvme-probe", bucket + "/" + k + "*", nil})
	}
	var missing []string
	for _, c := range calls {
		ok := false
		if a.NodePolicyJSON != "" {
			var err error
			if ok, err = archive.MayGrantIn(a.NodePolicyJSON, c.action, c.resource, c.keys); err != nil {
				return nil // Validate reports a policy it cannot read
			}
		}
		if !ok {
			missing = append(missing, c.action+" on "+c.shown)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	at := awsAt("node_policy_json")
	policy := "aws.node_policy_json grants none of them"
	if a.NodePolicyJSON == "" {
		policy = "aws.node_policy_json is not set"
	}
	return []*cluster.FieldError{cluster.Errorf(at, "Nodes May Not Read The Restore Source",
		"The nodes restore from %s with the instance role the platform creates, whose policy is the SSM read plus aws.node_policy_json, and they need %s; "+
			"%s. Without them the restore fails on the nodes and the apply waits 20 minutes for a leader before it fails. "+
			"Add a statement granting them to aws.node_policy_json (examples/restore-region shows one), or give aws.iam_instance_profile with a role that has them. "+
			"Ignore this warning only when a bucket policy on the source grants them to the role.",
		from, strings.Join(missing, " and "), policy)}
}
