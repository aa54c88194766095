package nodesim

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// EC2EnvOptions say what NewEC2Env makes.
type EC2EnvOptions struct {
	// Region is the region of the VPC, the bridge and the bucket.
	Region string
	// Zones are the VPC's availability zones, a subnet each (CreateVPC).
	Zones []string
	// Bucket is the archive bucket's name; "" makes none.
	Bucket string
	// Logf receives the simulator's progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// EC2Env is the EC2 platform without AWS, as the EC2 simulator tests, the module tests and cmd/ec2demo use
// it: a simulator, its EC2 bridge (every instance moto runs boots in a network namespace at its network
// interface's address), a VPC over the simulator's network with a subnet per zone, an archive bucket, the
// x86_64 AMI moto offers, and an SDK configuration for the simulated endpoint.
type EC2Env struct {
	Sim    *Sim
	Bridge *EC2Bridge
	Region string
	// VPCID is the VPC's ID; Subnets are its subnets' IDs by zone.
	VPCID   string
	Subnets map[string]string
	// Bucket is the archive bucket ("" when none was asked for).
	Bucket string
	// AMI is the first x86_64 image moto lists.
	AMI string
	// AWS is an SDK configuration for Region that reaches moto at AWSEndpoint from this namespace, with the
	// simulated credentials: ssm.NewFromConfig(e.AWS) and the like.
	AWS aws.Config
	// EC2 is moto's EC2 API in Region.
	EC2 *ec2.Client
	// ownsSim: Close closes the simulator (NewEC2Env's environment, not InRegion's).
	ownsSim bool
}

// NewEC2Env starts a simulator (New) and its EC2 bridge in opts.Region (StartEC2Bridge), creates the VPC
// (CreateVPC) and the bucket (CreateBucket), and finds the AMI. ctx bounds the setup only. On an error
// what was started is stopped again; otherwise the caller must Close the environment.
func NewEC2Env(ctx context.Context, opts EC2EnvOptions) (_ *EC2Env, err error) {
	sim, err := New(ctx, Options{Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	e, err := sim.ec2Region(ctx, opts)
	if err != nil {
		return nil, errors.Join(err, sim.Close())
	}
	e.ownsSim = true
	return e, nil
}

// InRegion is the same simulator in another region, as a disaster-recovery test needs it: a second EC2
// bridge in region, a VPC there with a subnet per zone, the bucket opts.Bucket there when given, and the
// AMI moto offers in that region. Both regions' VPCs cover the simulator's one network and moto hands out
// addresses in each region on its own, so an instance of one region can get an address a running node of
// the other has: that instance fails to boot (AddNode refuses the address). Run one region's nodes at a
// time. Closing the returned environment stops its bridge only; closing e closes the simulator.
func (e *EC2Env) InRegion(ctx context.Context, opts EC2EnvOptions) (*EC2Env, error) {
	if opts.Region == e.Region {
		return nil, fmt.Errorf("the simulator runs in %s already", opts.Region)
	}
	return e.Sim.ec2Region(ctx, opts)
}

// ec2Region starts the simulator's EC2 bridge in opts.Region, creates the VPC and the bucket there, and
// finds the AMI. On an error it stops the bridge again.
func (s *Sim) ec2Region(ctx context.Context, opts EC2EnvOptions) (_ *EC2Env, err error) {
	e := &EC2Env{Sim: s, Region: opts.Region, Bucket: opts.Bucket, AWS: s.AWSConfig(opts.Region), EC2: s.EC2Client(opts.Region)}
	defer func() {
		if err != nil && e.Bridge != nil {
			e.Bridge.Close()
		}
	}()
	if e.Bridge, err = s.StartEC2Bridge(ctx, opts.Region); err != nil {
		return nil, err
	}
	if e.VPCID, e.Subnets, err = s.CreateVPC(ctx, opts.Region, opts.Zones); err != nil {
		return nil, err
	}
	if opts.Bucket != "" {
		if err := s.CreateBucket(ctx, opts.Region, opts.Bucket); err != nil {
			return nil, err
		}
	}
	imgs, err := e.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil {
		return nil, fmt.Errorf("listing moto's x86_64 images in %s: %w", opts.Region, err)
	}
	if len(imgs.Images) == 0 {
		return nil, fmt.Errorf("moto lists no x86_64 image in %s", opts.Region)
	}
	e.AMI = aws.ToString(imgs.Images[0].ImageId)
	return e, nil
}

// Close stops the bridge; an environment made by NewEC2Env also closes the simulator (its nodes,
// namespaces and directories go).
func (e *EC2Env) Close() error {
	if e.Bridge != nil {
		e.Bridge.Close()
	}
	if !e.ownsSim {
		return nil
	}
	return e.Sim.Close()
}

// Terminate terminates an instance in moto (the bridge then removes its node), as a lost machine.
func (e *EC2Env) Terminate(ctx context.Context, id string) error {
	if _, err := e.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		return fmt.Errorf("terminating %s in moto: %w", id, err)
	}
	return nil
}

// Secret reads an SSM SecureString from moto, decrypted.
func (e *EC2Env) Secret(ctx context.Context, name string) (string, error) {
	out, err := ssm.NewFromConfig(e.AWS).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("reading %s from moto's SSM: %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), nil
}
