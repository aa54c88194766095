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
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
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
	root, err := tfwork.Root()
	if err != nil {
		return fmt.Errorf("%w (make ec2-demo)", err)
	}
	fx, err := nodesim.NewEC2Env(ctx, nodesim.EC2EnvOptions{Region: region, Zones: zones, Bucket: "ec2demo-archive",
		Logf: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, fx.Close()) }()
	d := &demo{sim: fx.Sim, bridge: fx.Bridge}

	if d.dir, err = os.MkdirTemp("", "ec2demo-"); err != nil {
		return err
	}
	defer os.RemoveAll(d.dir)
	// The provider from this checkout, installed offline as `terraform init -plugin-dir` finds it (the
	// example calls the aws-cluster module, which terraform init must install, and dev_overrides does not
	// apply to init).
	fmt.Println("== go build of the provider")
	provider, err := tfwork.BuildPluginDir(root, d.dir)
	if err != nil {
		return err
	}
	for _, tree := range []string{filepath.Join("examples", "aws-cluster"), filepath.Join("modules", "aws-cluster")} {
		if err := tfwork.CopyTree(filepath.Join(root, tree), filepath.Join(d.dir, tree)); err != nil {
			return err
		}
	}
	work := filepath.Join(d.dir, "examples", "aws-cluster")
	vars := map[string]any{
		"name": "demo", "region": region, "subnet_ids": fx.Subnets, "endpoint": fx.Sim.MotoURL(), "ami_id": fx.AMI,
		"postgres_major": 15, "dataset_gib": 10, "deletion_protection": false,
		"pgbackrest_options": archive.Spec{Bucket: fx.Bucket, Prefix: "clusters/demo", Region: region,
			Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions(),
	}
	b, _ := json.MarshalIndent(vars, "", "  ")
	if err := os.WriteFile(filepath.Join(work, "terraform.tfvars.json"), b, 0o644); err != nil {
		return err
	}
	d.dir = work
	d.env = append(append(os.Environ(), provider.Env()...), "AWS_ACCESS_KEY_ID=nodesim", "AWS_SECRET_ACCESS_KEY=nodesim-secret")
	if err := d.terraform(append([]string{"init", "-input=false"}, provider.InitArgs()...)...); err != nil {
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
	param, err := ssm.NewFromConfig(fx.AWS).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(out.PasswordParameter), WithDecryption: aws.Bool(true)})
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
	if _, err := fx.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{instance}}); err != nil {
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
			fx.Sim.ServiceNamespace(), out.ConnectionURI, out.PasswordParameter)
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
	cmd := d.sim.Command(context.Background(), "terraform", args...)
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
	cmd := d.sim.Command(context.Background(), "terraform", "output", "-json")
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
	cmd := d.sim.Command(context.Background(), "psql", uri, "-x", "-c", query)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=5")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
