package awsspec

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// Facts are the instance type's facts the nodes' bootstrap needs.
type Facts struct {
	// Architecture is bootstrap.ArchX86_64 or bootstrap.ArchARM64.
	Architecture string
	// DiskCount is the type's number of instance-store NVMe disks.
	DiskCount int
}

// Bootstrap is the bootstrap of every node of s on EC2: the cluster as bootstrap sees it and each
// node's EC2Node (before defaults), in s's node order. addrs are the nodes' private IPs by name (their
// ENIs'); region is the region the nodes read SSM in; allowed are the client networks (aws.allowed_cidrs,
// or the VPC's CIDR when unset): every node's /32 is added so that members always reach each other.
//
// Nothing in either holds a secret: the nodes read their passwords from the SSM parameters bootstrap's
// defaults name (SSMParameterNames).
func Bootstrap(s cluster.Spec, region string, addrs map[string]string, allowed []string, facts Facts) (bootstrap.Cluster, []bootstrap.EC2Node) {
	c := s.Bootstrap()
	var a Block
	if b := Of(s); b != nil {
		a = *b
	}
	cidrs := slices.Clone(allowed)
	for _, n := range s.Nodes {
		if ip := addrs[n.Name]; ip != "" && !slices.Contains(cidrs, ip+"/32") {
			cidrs = append(cidrs, ip+"/32")
		}
	}
	nodes := make([]bootstrap.EC2Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		var peers []bootstrap.Peer
		for _, o := range s.Nodes {
			if o.Name != n.Name {
				peers = append(peers, bootstrap.Peer{Name: o.Name, IP: addrs[o.Name]})
			}
		}
		nodes = append(nodes, bootstrap.EC2Node{
			Name:         n.Name,
			Zone:         n.Zone,
			PrivateIP:    addrs[n.Name],
			Peers:        peers,
			InstanceType: a.InstanceType,
			DiskCount:    facts.DiskCount,
			Architecture: facts.Architecture,
			Region:       region,
			AllowedCIDRs: slices.Clone(cidrs),
			TLS:          s.TLS != nil,
			Patroni: bootstrap.Patroni{
				TTL:                  a.Patroni.TTL,
				LoopWait:             a.Patroni.LoopWait,
				RetryTimeout:         a.Patroni.RetryTimeout,
				MaximumLagOnFailover: a.Patroni.MaximumLagOnFailover,
			},
		})
	}
	return c, nodes
}

// Render renders every node's user-data (bootstrap.RenderEC2), by node name. The error names each node
// bootstrap refused and why.
func Render(s cluster.Spec, region string, addrs map[string]string, allowed []string, facts Facts) (map[string]bootstrap.UserData, error) {
	return render(bootstrap.RenderEC2, s, region, addrs, allowed, facts)
}

// RenderForm is Render for the create's launch of every node at once (bootstrap.RenderEC2Form: etcd takes
// part in the first start without the usual wait), with the identity of Render's.
func RenderForm(s cluster.Spec, region string, addrs map[string]string, allowed []string, facts Facts) (map[string]bootstrap.UserData, error) {
	return render(bootstrap.RenderEC2Form, s, region, addrs, allowed, facts)
}

// RenderRestore is Render for the launch of a cluster whose every member is lost: each node's user-data
// bootstraps the cluster from its archive (bootstrap.RenderEC2Restore), with the identity of Render's.
func RenderRestore(s cluster.Spec, region string, addrs map[string]string, allowed []string, facts Facts) (map[string]bootstrap.UserData, error) {
	return render(bootstrap.RenderEC2Restore, s, region, addrs, allowed, facts)
}

// RenderClone is Render for the create of s, which has a restore block, as p planned its restore: each
// node's user-data bootstraps the cluster from p's backup of the source archive to p's target
// (bootstrap.RenderEC2Clone, Source), with the identity of Render's.
func RenderClone(s cluster.Spec, region string, addrs map[string]string, allowed []string, facts Facts, p cluster.RestorePlan) (map[string]bootstrap.UserData, error) {
	src, err := Source(s, p)
	if err != nil {
		return nil, err
	}
	return render(func(c bootstrap.Cluster, n bootstrap.EC2Node) (bootstrap.UserData, error) {
		return bootstrap.RenderEC2Clone(c, n, src)
	}, s, region, addrs, allowed, facts)
}

// Source is the restore of s (with a restore block) from the source archive as p planned it, as the
// nodes run it: the source's settings, the backup chosen, the target's recovery settings, and the record
// the first primary completes into s's own archive.
func Source(s cluster.Spec, p cluster.RestorePlan) (bootstrap.Source, error) {
	if s.Restore == nil || p.Backup.Label == "" {
		return bootstrap.Source{}, errors.New("provider bug: a restore without a planned backup")
	}
	from, _ := s.RestoreLocation()
	own, ok := s.ArchiveLocation()
	if !ok {
		return bootstrap.Source{}, errors.New("a cluster restored from another archive needs an archive of its own")
	}
	record, err := p.Record()
	if err != nil {
		return bootstrap.Source{}, err
	}
	a := s.Restore.Archive
	a.Stanza = from.Stanza
	return bootstrap.Source{Archive: a, Backup: p.Backup.Label, Recovery: p.Target.RecoverySettings(), Record: record, RecordPath: own.RestoredPath()}, nil
}

func render(renderEC2 func(bootstrap.Cluster, bootstrap.EC2Node) (bootstrap.UserData, error), s cluster.Spec, region string,
	addrs map[string]string, allowed []string, facts Facts) (map[string]bootstrap.UserData, error) {
	c, nodes := Bootstrap(s, region, addrs, allowed, facts)
	out := make(map[string]bootstrap.UserData, len(nodes))
	var errs []error
	for _, n := range nodes {
		u, err := renderEC2(c, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("rendering the user-data of node %s: %w", n.Name, err))
			continue
		}
		out[n.Name] = u
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// SSMPath is the cluster's SSM parameter path, "/pgnvme/<name>", under which its password parameters are.
func SSMPath(name string) string {
	return ssmDefaults(name).Path
}

// SSMParameterNames are the names of the cluster's three password parameters under SSMPath (the
// superuser's, the replication user's and Patroni's REST API's), as bootstrap's defaults name them: the
// platform stores the passwords there, the nodes read them at boot.
func SSMParameterNames(name string) (superuser, replication, restAPI string) {
	p := ssmDefaults(name)
	return p.SuperuserPassword, p.ReplicationPassword, p.RESTAPIPassword
}

// TakeoverParameter is the cluster's takeover instruction, a plain String parameter under SSMPath that
// the provider writes ("<node> <lsn>") when accept_data_loss_at_lsn promotes the one member left, and the
// node named acts on (bootstrap's takeover.sh).
func TakeoverParameter(name string) string {
	return ssmDefaults(name).Takeover
}

// ssmDefaults are the parameter names bootstrap gives a node of the cluster called name.
func ssmDefaults(name string) bootstrap.SSMParameters {
	return bootstrap.EC2Node{}.WithDefaults(bootstrap.Cluster{Name: name}).SSM
}

// ConnectionURIs are libpq multi-host URIs over every member with an address, in order, all at port and
// without a password: readWrite reaches whichever member is the primary
// (target_session_attrs=read-write), readOnly prefers a standby and falls back to the primary
// (target_session_attrs=prefer-standby, libpq 14 and later). Both are "" when no member has an address.
func ConnectionURIs(members []cluster.Member, port int, user, database string) (readWrite, readOnly string) {
	var hosts []string
	for _, m := range members {
		if m.Host != "" {
			hosts = append(hosts, net.JoinHostPort(m.Host, strconv.Itoa(port)))
		}
	}
	if len(hosts) == 0 {
		return "", ""
	}
	base := (&url.URL{Scheme: "postgresql", User: url.User(user), Host: strings.Join(hosts, ","), Path: "/" + database}).String()
	return base + "?target_session_attrs=read-write", base + "?target_session_attrs=prefer-standby"
}

// DynamicConfig is the dynamic configuration of s's cluster on EC2 (bootstrap.UserData.DynamicConfig,
// the same for every node): what Patroni keeps in the DCS and a running cluster changes through
// PATCH /config. addrs and allowed are Render's (pg_hba is in it); it does not depend on the instance
// type, so it is rendered with a stand-in for it.
func DynamicConfig(s cluster.Spec, addrs map[string]string, allowed []string) (map[string]any, error) {
	c, nodes := Bootstrap(s, "us-east-1", addrs, allowed, Facts{Architecture: bootstrap.ArchX86_64, DiskCount: 1})
	if len(nodes) == 0 {
		return nil, errors.New("the cluster has no nodes")
	}
	// Every node has the same; one rendering is enough (a refresh asks for it).
	u, err := bootstrap.RenderEC2(c, nodes[0])
	if err != nil {
		return nil, fmt.Errorf("rendering the user-data of node %s: %w", nodes[0].Name, err)
	}
	return u.DynamicConfig, nil
}
