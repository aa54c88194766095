package provider

import (
	"context"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// noLocalPlatform is pgnvme_cluster's local platform where there is none (internal/localcluster needs
// Linux; platform_local_other.go hands it in there): every call answers with why, localspec.SupportedOn's
// error at local, so a configuration with a local block fails at plan saying the platform needs Linux and
// what to do, and so does a refresh, destroy or import of a local cluster.
type noLocalPlatform struct{ why *cluster.FieldError }

func (p noLocalPlatform) Plan(context.Context, cluster.Spec, cluster.Prior) (cluster.Plan, error) {
	return cluster.Plan{}, p.why
}

func (p noLocalPlatform) Create(context.Context, cluster.Spec) (cluster.Status, error) {
	return cluster.Status{}, p.why
}

func (p noLocalPlatform) Read(context.Context, cluster.Spec, cluster.Prior) (cluster.Status, error) {
	return cluster.Status{}, p.why
}

func (p noLocalPlatform) Update(context.Context, cluster.Spec, cluster.Prior) (cluster.Status, error) {
	return cluster.Status{}, p.why
}

func (p noLocalPlatform) Delete(context.Context, cluster.Spec, cluster.Prior) error { return p.why }

func (p noLocalPlatform) Import(context.Context, string) (cluster.Spec, []cluster.Member, error) {
	return cluster.Spec{}, nil, p.why
}
