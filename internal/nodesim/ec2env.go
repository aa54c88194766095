package nodesim

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
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
}

// NewEC2Env starts a simulator (New) and its EC2 bridge in opts.Region (StartEC2Bridge), creates the VPC
// (CreateVPC) and the bucket (CreateBucket), and finds the AMI. ctx bounds the setup only. On an error
// what was started is stopped again; otherwise the caller must Close the environment.
func NewEC2Env(ctx context.Context, opts EC2EnvOptions) (_ *EC2Env, err error) {
	sim, err := New(ctx, Options{Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	e := &EC2Env{Sim: sim, Region: opts.Region, Bucket: opts.Bucket, AWS: sim.AWSConfig(opts.Region), EC2: sim.EC2Client(opts.Region)}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Close())
		}
	}()
	if e.Bridge, err = sim.StartEC2Bridge(ctx, opts.Region); err != nil {
		return nil, err
	}
	if e.VPCID, e.Subnets, err = sim.CreateVPC(ctx, opts.Region, opts.Zones); err != nil {
		return nil, err
	}
	if opts.Bucket != "" {
		if err := sim.CreateBucket(ctx, opts.Region, opts.Bucket); err != nil {
			return nil, err
		}
	}
	imgs, err := e.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil {
		return nil, fmt.Errorf("listing moto's x86_64 images: %w", err)
	}
	if len(imgs.Images) == 0 {
		return nil, errors.New("moto lists no x86_64 image")
	}
	e.AMI = aws.ToString(imgs.Images[0].ImageId)
	return e, nil
}

// Close stops the bridge and closes the simulator (its nodes, namespaces and directories go).
func (e *EC2Env) Close() error {
	if e.Bridge != nil {
		e.Bridge.Close()
	}
	return e.Sim.Close()
}
