package awsclient_test

import (
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// TestAWSCloud_publicIPs (moto): each node's interface gets one Elastic IP, tagged for the node, found
// again rather than allocated twice; ENIs reports it; releasing one node's leaves the other's, releasing
// the cluster's leaves another cluster's. No traffic goes to the addresses.
func TestAWSCloud_publicIPs(t *testing.T) {
	c := newAWSTest(t)
	ctx := t.Context()
	_, subnetIDs := c.vpc(t)
	const name = "tf-acc-eip"
	eni := map[string]string{}
	for i, node := range []string{"a", "b"} {
		e, err := c.CreateENI(ctx, subnetIDs[i], nil, "", map[string]string{awsspec.TagCluster: name, awsspec.TagNode: node})
		if err != nil {
			t.Fatal(err)
		}
		eni[node] = e.ID
	}
	other, err := c.CreateENI(ctx, subnetIDs[0], nil, "", map[string]string{awsspec.TagCluster: "tf-acc-other", awsspec.TagNode: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublicIP(ctx, other.ID, map[string]string{awsspec.TagCluster: "tf-acc-other", awsspec.TagNode: "a"}); err != nil {
		t.Fatal(err)
	}

	ips := map[string]string{}
	for _, node := range []string{"a", "b"} {
		ip, err := c.PublicIP(ctx, eni[node], map[string]string{awsspec.TagCluster: name, awsspec.TagNode: node})
		if err != nil {
			t.Fatalf("PublicIP %s: %v", node, err)
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			t.Fatalf("PublicIP %s = %q: %v", node, ip, err)
		}
		again, err := c.PublicIP(ctx, eni[node], map[string]string{awsspec.TagCluster: name, awsspec.TagNode: node})
		if err != nil || again != ip {
			t.Errorf("PublicIP %s again = %q, %v; want the same %s", node, again, err, ip)
		}
		ips[node] = ip
	}
	enis, err := c.ENIs(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range enis {
		if e.PublicIP != ips[e.Tags[awsspec.TagNode]] {
			t.Errorf("ENIs: node %s's interface has public address %q, want %s", e.Tags[awsspec.TagNode], e.PublicIP, ips[e.Tags[awsspec.TagNode]])
		}
	}
	count := func(cluster string) int {
		out, err := c.ec2.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:pgnvme:cluster"), Values: []string{cluster}}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Addresses)
	}
	if n := count(name); n != 2 {
		t.Errorf("%d Elastic IPs for two nodes, each asked twice; want 2", n)
	}

	if err := c.ReleasePublicIPs(ctx, name, "b"); err != nil {
		t.Fatalf("ReleasePublicIPs b: %v", err)
	}
	if n := count(name); n != 1 {
		t.Errorf("after releasing b's: %d Elastic IPs, want a's alone", n)
	}
	if err := c.ReleasePublicIPs(ctx, name, ""); err != nil {
		t.Fatalf("ReleasePublicIPs: %v", err)
	}
	if n, o := count(name), count("tf-acc-other"); n != 0 || o != 1 {
		t.Errorf("after releasing the cluster's: %d left, the other cluster's %d; want 0 and 1", n, o)
	}
	if err := c.ReleasePublicIPs(ctx, name, ""); err != nil {
		t.Errorf("ReleasePublicIPs with none left: %v", err)
	}
}
