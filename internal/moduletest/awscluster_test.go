package moduletest_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// simModules are the modules whose tests run against moto plus the node simulator (TestAWSClusterModule),
// not on this machine's PostgreSQL (TestModules).
var simModules = map[string]bool{"aws-cluster": true}

// hclMap writes m as an HCL map for -var.
func hclMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q=%q", k, m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestAWSClusterModule runs modules/aws-cluster's `terraform test` inside the node simulator's service
// namespace, where moto answers at 127.0.0.1:5000 (AWS_ENDPOINT_URL) and the nodes at their interfaces'
// addresses: the simulator boots every instance the module's cluster launches. Validation runs need nothing.
func TestAWSClusterModule(t *testing.T) {
	setup(t)
	const region = "eu-west-1"
	ctx := context.Background()
	fx := acctest.StartEC2Env(ctx, t, nodesim.EC2EnvOptions{Region: region, Zones: []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}, Bucket: "tf-acc-module"})
	sim := fx.Sim
	// The platform keeps a password parameter that exists: the quorum check reads the primary with it.
	const password = "tf-acc-module-password"
	if err := sim.PutSecureString(ctx, region, "/pgnvme/tf-acc-mod/superuser-password", password); err != nil {
		t.Fatal(err)
	}
	pgbackrest := archive.Spec{Bucket: fx.Bucket, Prefix: "clusters/tf-acc-mod", Region: region,
		Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions()

	work := t.TempDir()
	copyTree(t, root+"/modules", work)
	dir := work + "/aws-cluster"
	initOffline(t, dir)
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	cmd := sim.Command(cctx, terraformPath(t), "test", "-no-color",
		"-var", "region="+region, "-var", "subnet_ids="+hclMap(fx.Subnets), "-var", "ami_id="+fx.AMI,
		"-var", "pgbackrest_options="+hclMap(pgbackrest))
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), provider.Env()...),
		"AWS_ENDPOINT_URL="+sim.MotoURL(), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_REGION="+region, "PGPASSWORD="+password)
	b, err := cmd.CombinedOutput()
	out, took := string(b), time.Since(start)
	var events strings.Builder
	for _, ev := range fx.Bridge.Events() {
		events.WriteString(ev.String() + "\n")
	}
	if err != nil {
		t.Fatalf("terraform test in modules/aws-cluster failed after %s: %v\n%s\nsimulator:\n%s", took.Round(time.Second), err, out, events.String())
	}
	m := summary.FindStringSubmatch(out)
	if m == nil || m[2] != "0" || (m[3] != "" && m[3] != "0") {
		t.Fatalf("terraform test in modules/aws-cluster:\n%s", out)
	}
	insts, err := fx.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:pgnvme:cluster"), Values: []string{"tf-acc-mod"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(insts.Reservations) != 0 {
		t.Errorf("terraform test left %d instances running", len(insts.Reservations))
	}
	t.Logf("modules/aws-cluster: %s terraform test runs passed in %s\n%s", m[1], took.Round(time.Second), out)
}
