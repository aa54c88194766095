package ec2cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

// With one action taken out of the published operator policy, on the node simulator under IAM
// enforcement, the create is refused at the call that needs it, and the provider's error names the missing
// permission and points at the permissions guide: for an action of each of three stages of the create (the
// nodes' role, their launch, the load balancer). (Not an SSM action: moto answers a refused JSON-protocol
// call with an XML body the SDK cannot read, where AWS names the action.)
func TestAccEC2Cluster_missingPermission(t *testing.T) {
	t.Parallel()
	e := newSimEnv(t)
	ctx := context.Background()
	actions := []string{"iam:CreateRole", "ec2:RunInstances", "elasticloadbalancing:CreateLoadBalancer"}
	users := map[string]string{}
	for i, a := range actions {
		users[fmt.Sprintf("without-%d", i)] = acctest.PolicyWithout(t, awsclient.OperatorPolicy(), a)
	}
	creds := e.enforceIAMUsers(ctx, users)
	env := e.env
	for i, action := range actions {
		c := creds[fmt.Sprintf("without-%d", i)]
		e.env = append(slices.Clone(env), "AWS_ACCESS_KEY_ID="+c.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+c.SecretAccessKey)
		e.dir = t.TempDir()
		e.config(fmt.Sprintf("perm%d", i), "m6id.large", false)
		out, err := e.terraform("apply", "-auto-approve", "-no-color", "-input=false")
		flat := strings.Join(strings.Fields(out), " ")
		if err == nil {
			t.Errorf("without %s the create succeeded:\n%s", action, out)
			continue
		}
		for _, want := range []string{"not authorized to perform: " + action, "lack the IAM permission " + action, "aws-permissions.md"} {
			if !strings.Contains(flat, want) {
				t.Errorf("without %s the create's error does not say %q:\n%s", action, want, out)
			}
		}
		t.Logf("without %s: %s", action, errorLines(out))
	}
}

// errorLines are the lines of Terraform's output from its first "Error:" on, joined.
func errorLines(out string) string {
	if i := strings.Index(out, "Error:"); i >= 0 {
		out = out[i:]
	}
	return strings.Join(strings.Fields(out), " ")
}
