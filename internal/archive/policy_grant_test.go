package archive_test

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestMayGrant(t *testing.T) {
	bucketPolicy := archive.Spec{Bucket: "dr-bucket", Prefix: "clusters/orders", Region: "us-west-2"}.NodePolicy().JSON()
	for _, tc := range []struct {
		name, doc, action, resource string
		want                        bool
	}{
		{"an archive bucket's node policy, its own prefix", bucketPolicy, "s3:GetObject", "arn:aws:s3:::dr-bucket/clusters/orders/archive/orders/archive.info", true},
		{"listing its bucket (the prefix condition taken as met)", bucketPolicy, "s3:ListBucket", "arn:aws:s3:::dr-bucket", true},
		{"another prefix", bucketPolicy, "s3:GetObject", "arn:aws:s3:::dr-bucket/clusters/billing/archive/billing/archive.info", false},
		{"another bucket", bucketPolicy, "s3:GetObject", "arn:aws:s3:::tf-acc-archive/clusters/orders/archive/orders/archive.info", false},
		{"one statement, strings, wildcard action in another case", `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"S3:Get*","Resource":"arn:aws:s3:::b/p?/*"}}`,
			"s3:GetObject", "arn:aws:s3:::b/p1/x/y", true},
		{"a Deny is no grant", `{"Statement":[{"Effect":"Deny","Action":"s3:*","Resource":"*"}]}`, "s3:GetObject", "arn:aws:s3:::b/k", false},
		{"NotAction cannot be told: a grant", `{"Statement":[{"Effect":"Allow","NotAction":"iam:*","Resource":"*"}]}`, "s3:GetObject", "arn:aws:s3:::b/k", true},
		{"everything", `{"Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`, "s3:ListBucket", "arn:aws:s3:::b", true},
		{"a bucket ARN is not its objects", `{"Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b"}]}`, "s3:GetObject", "arn:aws:s3:::b/k", false},
	} {
		got, err := archive.MayGrant(tc.doc, tc.action, tc.resource)
		if err != nil || got != tc.want {
			t.Errorf("%s: MayGrant(%s on %s) = %v, %v; want %v", tc.name, tc.action, tc.resource, got, err, tc.want)
		}
	}
	// A listing under a prefix: the node policy's s3:prefix condition decides.
	for _, tc := range []struct {
		name, doc, prefix string
		want              bool
	}{
		{"its own prefix", bucketPolicy, "clusters/orders/archive/orders/", true},
		{"the prefix itself", bucketPolicy, "clusters/orders", true},
		{"another cluster's prefix", bucketPolicy, "clusters/billing/archive/billing/", false},
		{"StringEquals", `{"Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::dr-bucket","Condition":{"StringEquals":{"s3:prefix":"a/"}}}]}`, "a/b/", false},
		{"another operator is taken as met", `{"Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::dr-bucket","Condition":{"StringNotLike":{"s3:prefix":"x*"}}}]}`, "x/", true},
		{"no condition", `{"Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::dr-bucket"}]}`, "x/", true},
	} {
		got, err := archive.MayGrantIn(tc.doc, "s3:ListBucket", "arn:aws:s3:::dr-bucket", map[string]string{"s3:prefix": tc.prefix})
		if err != nil || got != tc.want {
			t.Errorf("%s: MayGrantIn(s3:ListBucket, prefix %s) = %v, %v; want %v", tc.name, tc.prefix, got, err, tc.want)
		}
	}
	if _, err := archive.MayGrant(`{"Statement": 3}`, "s3:GetObject", "arn:aws:s3:::b/k"); err == nil {
		t.Error("a Statement that is a number: want an error")
	}
}
