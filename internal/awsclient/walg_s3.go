package awsclient

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// S3ForWALG is an S3 client that reaches a WAL-G archive as WAL-G itself does, from its environment env:
// AWS_REGION, AWS_ENDPOINT (a full URL) with AWS_S3_FORCE_PATH_STYLE, WALG_S3_CA_CERT_FILE; the credentials
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN when env gives them, else AWS_PROFILE's,
// else the SDK's default chain (an instance or web identity role). For the restore drill of a WAL-G archive.
func S3ForWALG(ctx context.Context, env map[string]string) (*s3.Client, error) {
	var loadOpts []func(*config.LoadOptions) error
	if region := env["AWS_REGION"]; region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	if key := env["AWS_ACCESS_KEY_ID"]; key != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"])))
	} else if profile := env["AWS_PROFILE"]; profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(profile))
	}
	if ca := env["WALG_S3_CA_CERT_FILE"]; ca != "" {
		f, err := os.Open(ca)
		if err != nil {
			return nil, fmt.Errorf("reading WALG_S3_CA_CERT_FILE: %w", err)
		}
		defer f.Close()
		loadOpts = append(loadOpts, config.WithCustomCABundle(f))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("configuring S3 for the WAL-G archive: %w", err)
	}
	logCalls(&cfg)
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if ep := env["AWS_ENDPOINT"]; ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
		o.UsePathStyle = strings.EqualFold(env["AWS_S3_FORCE_PATH_STYLE"], "true")
		// WAL-G uploads without checksums: the SDK would log at every read that it has none to validate.
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}

// ReadSourceHealth reads the archive at loc as a restore from it needs it (no cluster of it is read: its
// WAL and base backups only, every WAL-G backup's positions included) and judges it at now.
func ReadSourceHealth(ctx context.Context, api ArchiveReaderAPI, loc archive.Location, now time.Time) (*archive.Health, error) {
	r := archive.Reading{Tool: loc.Tool}
	var err error
	if r.WAL, err = ListArchiveWAL(ctx, api, loc); err != nil {
		return nil, err
	}
	if r.Backups, err = ReadArchiveBackups(ctx, api, loc); err != nil {
		return nil, err
	}
	if err := ReadWALGBackupPositions(ctx, api, loc, r.Backups); err != nil {
		return nil, err
	}
	h := archive.Assess(r, now)
	return &h, nil
}
