package main

import (
	"strings"
	"testing"
)

// Lines as Terraform writes the provider's debug log (TF_LOG_PROVIDER=DEBUG, TF_LOG_PATH), taken from a
// real run and shortened; fields come in any order.
const refreshLog = `2026-12-05T15:24:52.487Z [DEBUG] provider.terraform-provider-pgnvme: aws request: tf_resource_type=pgnvme_cluster tf_rpc=ReadResource status=200 @module=pgnvme operation=DescribeInstances region=us-east-1 service=ec2 timestamp=2026-12-05T15:24:52.486Z
2026-12-05T15:24:52.504Z [DEBUG] provider.terraform-provider-pgnvme: aws request: tf_rpc=ReadResource @module=pgnvme operation=DescribeInstances region=us-east-1 status=0 error="https response error StatusCode: 0, request send failed, Post \"http://127.0.0.1:1/\": dial tcp 127.0.0.1:1: connect: connection refused" service=ec2 timestamp=2026-12-05T15:24:52.504Z
2026-12-05T15:24:52.600Z [DEBUG] provider.terraform-provider-pgnvme: aws request: tf_rpc=ReadResource operation=GetParameter region=us-east-1 service=ssm status=200
2026-12-05T15:24:52.700Z [DEBUG] provider.terraform-provider-pgnvme: patroni request: tf_rpc=ReadResource host=198.18.0.11 method=GET path=/cluster status=200
2026-12-05T15:24:52.800Z [DEBUG] provider.terraform-provider-pgnvme: postgres session: tf_rpc=ReadResource target=postgres@198.18.0.11:5432/postgres
2026-12-05T15:24:52.900Z [DEBUG] provider.terraform-provider-pgnvme: aws request: tf_rpc=ValidateResourceConfig operation=DescribeSubnets region=us-east-1 service=ec2 status=200
2026-12-05T15:24:53.000Z [DEBUG] provider.terraform-provider-pgnvme: configured pgnvme provider: region=us-east-1 tf_rpc=ReadResource
`

func TestCountCalls(t *testing.T) {
	c := countCalls([]byte(refreshLog))
	if got, want := c.String(), "ec2 DescribeInstances 2, patroni GET /cluster 1, postgres session 1, ssm GetParameter 1"; got != want {
		t.Errorf("calls %q, want %q (each attempt, reads only)", got, want)
	}
	if c.total() != 5 || c.By["ec2"] != 2 || c.By["patroni"] != 1 || c.By["postgres"] != 1 {
		t.Errorf("by kind %v, total %d", c.By, c.total())
	}
	rows := byKind([]ec2Run{{refresh: c, refreshFloor: refreshFloor(1, 3)}})
	if rows[0].Kind != "ec2" || rows[0].Calls.Median != 2 || rows[0].Floor != 3 {
		t.Errorf("first row %+v", rows[0])
	}
	for _, r := range rows {
		if strings.TrimSpace(r.Reads) == "" {
			t.Errorf("kind %s has no reads", r.Kind)
		}
	}
}
