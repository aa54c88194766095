package awsclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3ForPgBackRest is an S3 client that reaches a pgBackRest repository as pgBackRest itself does, from its
// repo1 options: repo1-s3-endpoint (with repo1-storage-port, https), repo1-s3-region, repo1-s3-uri-style,
// repo1-storage-ca-file and repo1-storage-verify-tls; the credentials of repo1-s3-key-type shared
// (repo1-s3-key, repo1-s3-key-secret, repo1-s3-token), else the SDK's default chain (an instance or web
// identity role, as pgBackRest's auto and web-id key types). For a local cluster whose repository is in S3.
func S3ForPgBackRest(ctx context.Context, opts map[string]string) (*s3.Client, error) {
	var loadOpts []func(*config.LoadOptions) error
	if region := opts["repo1-s3-region"]; region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	if key := opts["repo1-s3-key"]; key != "" && opts["repo1-s3-key-type"] != "auto" && opts["repo1-s3-key-type"] != "web-id" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, opts["repo1-s3-key-secret"], opts["repo1-s3-token"])))
	}
	if ca := opts["repo1-storage-ca-file"]; ca != "" {
		f, err := os.Open(ca)
		if err != nil {
			return nil, fmt.Errorf("reading repo1-storage-ca-file: %w", err)
		}
		defer f.Close()
		loadOpts = append(loadOpts, config.WithCustomCABundle(f))
	}
	if v := strings.ToLower(opts["repo1-storage-verify-tls"]); v == "n" || v == "false" {
		loadOpts = append(loadOpts, config.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}})) //nolint:gosec // the repository's own setting, as pgBackRest honours it
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("configuring S3 for the pgBackRest repository: %w", err)
	}
	logCalls(&cfg)
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if host := opts["repo1-s3-endpoint"]; host != "" && !strings.HasSuffix(host, ".amazonaws.com") {
			if port := opts["repo1-storage-port"]; port != "" && port != "443" {
				host += ":" + port
			}
			o.BaseEndpoint = aws.String("https://" + host)
		}
		o.UsePathStyle = opts["repo1-s3-uri-style"] == "path"
	}), nil
}
