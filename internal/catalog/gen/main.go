// Command gen writes the instance type catalog snapshot that package catalog
// embeds. It reads DescribeInstanceTypes, DescribeInstanceTypeOfferings and
// DescribeAvailabilityZones in each region, from AWS (default credential
// chain) or from an EC2-compatible endpoint such as moto. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

const defaultRegions = "us-east-1,us-east-2,us-west-2,eu-west-1,eu-central-1,ap-southeast-1"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "EC2 endpoint URL, e.g. http://127.0.0.1:5000 for moto; empty reads real AWS with the default credential chain")
	regions := fs.String("regions", defaultRegions, "comma-separated regions to read")
	out := fs.String("out", "", "file to write (gzip JSON), e.g. snapshot.json.gz")
	origin := fs.String("origin", "", `free text added to the recorded origin, e.g. "via moto 5.2.1"`)
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("-out is required: name the file to write, e.g. -out snapshot.json.gz")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: use flags only", fs.Args())
	}
	names, err := parseRegions(*regions)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	snap := &catalog.Snapshot{
		Date:   time.Now().UTC().Format(time.DateOnly),
		Origin: describeOrigin(*endpoint, *origin),
	}
	byName := map[string]catalog.InstanceType{}
	firstSeen := map[string]string{}
	for _, region := range names {
		api, err := newEC2(ctx, region, *endpoint)
		if err != nil {
			return err
		}
		types, reg, err := awsclient.FetchCatalog(ctx, api, region)
		if err != nil {
			return err
		}
		// Instance type facts are global: merge by name. A difference between
		// regions is reported and the first region read wins.
		for _, t := range types {
			prev, ok := byName[t.Name]
			if !ok {
				byName[t.Name] = t
				firstSeen[t.Name] = region
				continue
			}
			if !reflect.DeepEqual(prev, t) {
				fmt.Fprintf(os.Stderr, "gen: warning: %s differs between %s (%+v) and %s (%+v); keeping %s\n",
					t.Name, firstSeen[t.Name], prev, region, t, firstSeen[t.Name])
			}
		}
		snap.Regions = append(snap.Regions, reg)
		fmt.Fprintf(os.Stderr, "gen: %s: %d instance types with SSD instance storage, %d offered, %d zones\n",
			region, len(types), len(reg.Offerings), len(reg.Zones))
	}
	for _, t := range byName {
		snap.Types = append(snap.Types, t)
	}

	b, err := catalog.Encode(snap)
	if err != nil {
		return err
	}
	if err := writeFile(*out, b); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: wrote %s: %d types, %d regions, %d bytes (%s; %s)\n",
		*out, len(snap.Types), len(snap.Regions), len(b), snap.Date, snap.Origin)
	return nil
}

func parseRegions(list string) ([]string, error) {
	var names []string
	for r := range strings.SplitSeq(list, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if slices.Contains(names, r) {
			return nil, fmt.Errorf("-regions lists %s twice: list each region once", r)
		}
		names = append(names, r)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("-regions is empty: give at least one region, e.g. -regions us-east-1")
	}
	return names, nil
}

func describeOrigin(endpoint, extra string) string {
	s := "DescribeInstanceTypes+DescribeInstanceTypeOfferings+DescribeAvailabilityZones"
	if extra = strings.TrimSpace(extra); extra != "" {
		s += " " + extra
	}
	if endpoint != "" {
		// A loopback endpoint is an emulator on a throwaway port: record that, not the port, so
		// regenerating gives the same file.
		if u, err := url.Parse(endpoint); err == nil && (u.Hostname() == "127.0.0.1" || u.Hostname() == "localhost" || u.Hostname() == "::1") {
			return s + " (local emulator endpoint)"
		}
		return s + " (endpoint " + endpoint + ")"
	}
	return s + " (AWS, default credential chain)"
}

// newEC2 builds an EC2 client for region. With an endpoint and no
// AWS_ACCESS_KEY_ID or AWS_PROFILE in the environment it signs with static
// "test" credentials, which moto and LocalStack accept.
func newEC2(ctx context.Context, region, endpoint string) (*ec2.Client, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration for %s: %w", region, err)
	}
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// writeFile replaces path with b through a temporary file in the same
// directory, so an interrupted run leaves the old snapshot in place.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
