// Command ec2demo applies examples/aws-cluster to moto plus the node simulator (internal/nodesim), so the
// EC2 platform of pgnvme_cluster can be tried without an AWS account: `make ec2-demo` (as root).
//
// It starts the simulator and its EC2 bridge (every instance moto runs boots from its user-data in a network
// namespace at its network interface's address), creates a VPC over the simulator's network and a bucket for
// the archive, then runs Terraform inside the simulator's service namespace: apply, a query through the
// multi-host connection_uri, the primary's instance terminated in moto (Patroni fails over; the next apply
// replaces the lost node alone), and destroy. Everything it made is removed at the end, also on failure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

const region = "eu-west-1"

var zones = []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}

func main() {
	keep := flag.Bool("keep", false, "keep the cluster and the simulator running after the failover, until Enter is pressed")
	flag.Parse()
	if err := run(*keep); err != nil {
		fmt.Fprintln(os.Stderr, "ec2demo:", err)
		os.Exit(1)
	}
}

type demo struct {
	sim    *nodesim.Sim
	bridge *nodesim.EC2Bridge
	dir    string
	env    []string
}

func run(keep bool) (err error) {
	ctx := context.Background()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	sim, err := nodesim.New(ctx, nodesim.Options{Logf: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sim.Close()) }()
	d := &demo{sim: sim}
	if d.bridge, err = sim.StartEC2Bridge(ctx, region); err != nil {
		return err
	}
	defer d.bridge.Close()
	_, subnets, err := sim.CreateVPC(ctx, region, zones)
	if err != nil {
		return err
	}
	bucket := "ec2demo-archive"
	if err := sim.CreateBucket(ctx, region, bucket); err != nil {
		return err
	}
	imgs, err := sim.EC2Client(region).DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(imgs.Images) == 0 {
		return fmt.Errorf("moto lists no x86_64 image: %w", err)
	}

	if d.dir, err = os.MkdirTemp("", "ec2demo-"); err != nil {
		return err
	}
	defer os.RemoveAll(d.dir)
	// The provider from this checkout, installed offline as `terraform init -plugin-dir` finds it (the
	// example calls the aws-cluster module, which terraform init must install, and dev_overrides does not
	// apply to init).
	version, err := changelogVersion(root)
	if err != nil {
		return err
	}
	plugins := filepath.Join(d.dir, "plugins")
	bin := filepath.Join(plugins, "registry.terraform.io", "pgnvme", "pgnvme", version, runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-pgnvme_v"+version)
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+version, "-o", bin, ".")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the provider: %w", err)
	}
	rc := filepath.Join(d.dir, "terraformrc")
	if err := os.WriteFile(rc, []byte("disable_checkpoint = true\n"), 0o600); err != nil {
		return err
	}
	for _, tree := range []string{filepath.Join("examples", "aws-cluster"), filepath.Join("modules", "aws-cluster")} {
		if err := copyDir(filepath.Join(root, tree), filepath.Join(d.dir, tree)); err != nil {
			return err
		}
	}
	work := filepath.Join(d.dir, "examples", "aws-cluster")
	vars := map[string]any{
		"name": "demo", "region": region, "subnet_ids": subnets, "endpoint": sim.MotoURL(), "ami_id": aws.ToString(imgs.Images[0].ImageId),
		"postgres_major": 15, "dataset_gib": 10, "deletion_protection": false,
		"pgbackrest_options": archive.Spec{Bucket: bucket, Prefix: "clusters/demo", Region: region,
			Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions(),
	}
	b, _ := json.MarshalIndent(vars, "", "  ")
	if err := os.WriteFile(filepath.Join(work, "terraform.tfvars.json"), b, 0o644); err != nil {
		return err
	}
	d.dir = work
	d.env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "AWS_ACCESS_KEY_ID=nodesim", "AWS_SECRET_ACCESS_KEY=nodesim-secret",
		"TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	if err := d.terraform("init", "-input=false", "-plugin-dir", plugins); err != nil {
		return err
	}

	fmt.Println("== terraform apply: 3 instances on moto, booted by the simulator")
	start := time.Now()
	if err := d.terraform("apply", "-auto-approve", "-input=false"); err != nil {
		return err
	}
	fmt.Printf("== created in %.0f s\n", time.Since(start).Seconds())
	defer func() {
		fmt.Println("== terraform destroy")
		err = errors.Join(err, d.terraform("destroy", "-auto-approve", "-input=false"))
	}()
	out, err := d.output()
	if err != nil {
		return err
	}
	ssmc := ssm.New(ssm.Options{Region: region, BaseEndpoint: aws.String(nodesim.AWSEndpoint), HTTPClient: sim.HTTPClient(),
		Credentials: credentials.NewStaticCredentialsProvider("nodesim", "nodesim-secret", "")})
	param, err := ssmc.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(out.PasswordParameter), WithDecryption: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("reading the password from SSM: %w", err)
	}
	password := aws.ToString(param.Parameter.Value)
	query := "SELECT inet_server_addr() AS primary_address, pg_is_in_recovery() AS in_recovery, current_setting('synchronous_standby_names') AS quorum"
	fmt.Printf("== psql %q\n", out.ConnectionURI)
	if err := d.psql(out.ConnectionURI, password, query); err != nil {
		return err
	}

	var primary string
	for _, n := range out.Nodes {
		if n.Role == "primary" {
			primary = n.Name
		}
	}
	instance := out.InstanceIDs[primary]
	if instance == "" {
		return fmt.Errorf("no instance for the primary %q", primary)
	}
	fmt.Printf("== terminating the primary %s (instance %s) in moto: Patroni fails over\n", primary, instance)
	if _, err := sim.EC2Client(region).TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{instance}}); err != nil {
		return err
	}
	failedOver := time.Now()
	for !terminated(d.bridge, instance) { // the simulated machine goes within a second of moto's terminate
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // polling the simulator's log
	}
	fmt.Println("== psql again (retried until Patroni's leader lock, ttl 30 s, expires and a standby takes over): the same URI reaches the new primary")
	for {
		if err := d.psql(out.ConnectionURI, password, query); err == nil {
			break
		} else if time.Since(failedOver) > 3*time.Minute {
			return fmt.Errorf("no primary answered within 3 minutes of the failover: %w", err)
		}
		time.Sleep(3 * time.Second) //nolint:forbidigo // a client retrying, as an application would
	}
	fmt.Printf("== a new primary took writes %.0f s after the old one's instance was terminated\n", time.Since(failedOver).Seconds())
	fmt.Println("== terraform apply: replaces the lost node alone, on its network interface")
	start = time.Now()
	if err := d.terraform("apply", "-auto-approve", "-input=false"); err != nil {
		return err
	}
	fmt.Printf("== replaced in %.0f s\n", time.Since(start).Seconds())
	if err := d.terraform("output", "nodes"); err != nil {
		return err
	}
	if keep {
		fmt.Printf("== the cluster runs; reach it with: ip netns exec %s psql %q (password: SSM %s)\n== press Enter to destroy it\n",
			sim.ServiceNamespace(), out.ConnectionURI, out.PasswordParameter)
		_, _ = fmt.Scanln()
	}
	return nil
}

// terminated reports whether the simulator has removed instance's machine.
func terminated(b *nodesim.EC2Bridge, instance string) bool {
	for _, ev := range b.Events() {
		if ev.InstanceID == instance && ev.Kind == nodesim.EventTerminated {
			return true
		}
	}
	return false
}

func (d *demo) terraform(args ...string) error {
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + d.sim.ServiceNamespace(), "--", "terraform"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = d.dir, d.env, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("terraform %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

type outputs struct {
	ConnectionURI     string
	PasswordParameter string
	InstanceIDs       map[string]string
	Nodes             []struct{ Name, Role, Zone, Host string }
}

func (d *demo) output() (outputs, error) {
	cmd := exec.Command("nsenter", "--net=/run/netns/"+d.sim.ServiceNamespace(), "--", "terraform", "output", "-json")
	cmd.Dir, cmd.Env = d.dir, d.env
	b, err := cmd.Output()
	if err != nil {
		return outputs{}, fmt.Errorf("terraform output: %w", err)
	}
	var raw map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return outputs{}, err
	}
	var o outputs
	_ = json.Unmarshal(raw["connection_uri"].Value, &o.ConnectionURI)
	_ = json.Unmarshal(raw["password_parameter"].Value, &o.PasswordParameter)
	_ = json.Unmarshal(raw["nodes"].Value, &o.Nodes)
	_ = json.Unmarshal(raw["instance_ids"].Value, &o.InstanceIDs)
	return o, nil
}

func (d *demo) psql(uri, password, query string) error {
	cmd := exec.Command("nsenter", "--net=/run/netns/"+d.sim.ServiceNamespace(), "--", "psql", uri, "-x", "-c", query)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=5")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// changelogVersion is the newest version heading in CHANGELOG.md, the version the modules require.
func changelogVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^## ([0-9]+\.[0-9]+\.[0-9]+)\b`).FindSubmatch(b)
	if m == nil {
		return "", errors.New("CHANGELOG.md has no \"## X.Y.Z\" heading to take the provider's version from")
	}
	return string(m[1]), nil
}

// copyDir copies the regular files of src into dst (no .terraform, no state).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".terraform" {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasPrefix(e.Name(), "terraform.tfstate") || e.Name() == ".terraform.lock.hcl" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// repoRoot is this checkout's root (where go.mod is).
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		if root := filepath.Join(filepath.Dir(file), "..", ".."); fileExists(filepath.Join(root, "go.mod")) {
			return filepath.Abs(root)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if fileExists(filepath.Join(wd, "go.mod")) {
		return wd, nil
	}
	return "", errors.New("run ec2demo from the repository's root (make ec2-demo)")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
