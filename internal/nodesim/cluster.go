package nodesim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// ClusterOptions describe a cluster of simulated EC2 nodes. Zero values take the defaults noted.
type ClusterOptions struct {
	// Name is the cluster's name (Patroni's scope, the pgBackRest stanza); default "sim".
	Name string
	// Nodes is the number of nodes, named pg-1, pg-2, ...; default 3. The cluster waits for ANY 1 standby,
	// a single node for none.
	Nodes int
	// PostgresMajor is the PostgreSQL major version; default capacity.DefaultPostgresMajor (scripts/test-deps.sh
	// builds it into /usr/lib/postgresql/<major>, where the nodes' Patroni runs it).
	PostgresMajor int
	// Region is the AWS region of the nodes, the bucket and the SSM parameters; default eu-west-1.
	Region string
	// Bucket is the archive bucket, created at the AWS endpoint; default "nodesim-archive".
	Bucket string
	// Patroni are Patroni's settings; zero timings mean ttl 20, loop_wait 2, retry_timeout 4 (quick
	// failovers for tests; the product's defaults are Patroni's 30, 10, 10).
	Patroni bootstrap.Patroni
	// EtcdJoinWaitSeconds is how long a new etcd member asks the others before a first start; default 5.
	EtcdJoinWaitSeconds int
	// DiskWaitSeconds is how long the disk script waits for the disks; default 10.
	DiskWaitSeconds int
	// Parameters are PostgreSQL parameters; default shared_buffers 64MB and max_connections 50.
	Parameters map[string]string
	// NoDisks leaves the nodes without instance-store disks (their disks never appear).
	NoDisks bool
	// TLS renders the nodes with TLS (bootstrap.EC2Node.TLS): a CA made for the cluster issues each node's
	// member and replication certificates, stored as the nodes' bundles in SSM before they boot.
	TLS bool
	// TLSValidity is how long the nodes' certificates are valid; default 24 hours.
	TLSValidity time.Duration
}

func (o ClusterOptions) withDefaults() ClusterOptions {
	if o.Name == "" {
		o.Name = "sim"
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.PostgresMajor == 0 {
		o.PostgresMajor = capacity.DefaultPostgresMajor
	}
	if o.Region == "" {
		o.Region = "eu-west-1"
	}
	if o.Bucket == "" {
		o.Bucket = "nodesim-archive"
	}
	if o.Patroni.TTL == 0 && o.Patroni.LoopWait == 0 && o.Patroni.RetryTimeout == 0 {
		o.Patroni.TTL, o.Patroni.LoopWait, o.Patroni.RetryTimeout = 20, 2, 4
	}
	if o.EtcdJoinWaitSeconds == 0 {
		o.EtcdJoinWaitSeconds = 5
	}
	if o.DiskWaitSeconds == 0 {
		o.DiskWaitSeconds = 10
	}
	if o.Parameters == nil {
		o.Parameters = map[string]string{"shared_buffers": "64MB", "max_connections": "50"}
	}
	return o
}

// Passwords are the cluster's passwords, stored as SSM SecureStrings where the nodes read them.
type Passwords struct {
	Superuser, Replication, RESTAPI string
}

// Cluster is a pgnvme cluster of simulated EC2 nodes, each booted from the user-data bootstrap.RenderEC2
// renders for it.
type Cluster struct {
	Sim *Sim
	// Spec is the cluster as rendered.
	Spec bootstrap.Cluster
	// Hosts are the nodes as rendered (bootstrap.EC2Node, before defaults), by name.
	Hosts map[string]bootstrap.EC2Node
	// UserData are the rendered user-data, by node name.
	UserData map[string]bootstrap.UserData
	// Nodes are the simulated nodes in the cluster's order.
	Nodes []*Node
	// Archive is the archive bucket's description (the simulated endpoint, path-style).
	Archive   archive.Spec
	Passwords Passwords
	Region    string
	// TLS is the cluster's CA and the certificate the simulator's client presents (etcd asks every client
	// for one); nil without TLS.
	TLS *ClusterTLS
	// client reaches the nodes' REST APIs and etcd: the simulator's, or with TLS one that trusts the
	// cluster's CA and presents TLS.Client.
	client *http.Client
}

// ClusterTLS is a TLS cluster's authority, the simulator's own client certificate, and what each node's
// bundle holds.
type ClusterTLS struct {
	CA, Client pki.Pair
	Validity   time.Duration
	// Files are the parts of each node's bundle, by node name.
	Files map[string]bootstrap.TLSFiles
	// clientCert is Client, parsed once for the simulator's handshakes.
	clientCert tls.Certificate
}

// NewCluster renders the user-data of every node of a cluster (bootstrap.RenderEC2 with the simulator's
// addresses, DiskGlob and a pgBackRest archive in a bucket at the AWS endpoint), creates the bucket and the
// SSM password parameters, and adds the nodes (with one disk each unless NoDisks). It boots nothing.
func (s *Sim) NewCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	opts = opts.withDefaults()
	c := &Cluster{Sim: s, Hosts: map[string]bootstrap.EC2Node{}, UserData: map[string]bootstrap.UserData{}, Region: opts.Region, client: s.client}
	var names []string
	for i := range opts.Nodes {
		names = append(names, "pg-"+strconv.Itoa(i+1))
	}
	c.Archive = archive.Spec{
		Bucket: opts.Bucket, Prefix: "clusters/" + opts.Name, Region: opts.Region,
		Endpoint: archive.Endpoint{URL: AWSEndpoint, PathStyle: true},
	}
	c.Spec = bootstrap.Cluster{
		Name:          opts.Name,
		PostgresMajor: opts.PostgresMajor,
		Nodes:         names,
		Synchronous: bootstrap.Synchronous{
			Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOn,
		},
		Parameters: opts.Parameters,
		// The stanza and the first full backup come from Patroni's post_bootstrap on the first leader.
		Archive: &bootstrap.Archive{PgBackRestOptions: c.Archive.PgBackRestOptions(), BackupOnCreate: true},
	}
	if opts.Nodes == 1 {
		// No standby to wait for.
		c.Spec.Synchronous.Number = 0
	}
	arch := map[string]string{"amd64": bootstrap.ArchX86_64, "arm64": bootstrap.ArchARM64}[runtime.GOARCH]
	for i, name := range names {
		var peers []bootstrap.Peer
		for j, o := range names {
			if o != name {
				peers = append(peers, bootstrap.Peer{Name: o, IP: s.NodeIP(j).String()})
			}
		}
		h := bootstrap.EC2Node{
			Name: name, Zone: opts.Region + string(rune('a'+i%3)), PrivateIP: s.NodeIP(i).String(), Peers: peers,
			InstanceType: "m6id.large", DiskCount: 1, Architecture: arch, Region: opts.Region,
			AllowedCIDRs:      []string{s.Subnet.String()},
			InstanceStoreGlob: DiskGlob,
			DiskWaitSeconds:   opts.DiskWaitSeconds,
			Etcd:              bootstrap.Etcd{JoinWaitSeconds: opts.EtcdJoinWaitSeconds},
			Patroni:           opts.Patroni,
			SSMEndpoint:       AWSEndpoint,
			TLS:               opts.TLS,
		}
		ud, err := bootstrap.RenderEC2(c.Spec, h)
		if err != nil {
			return nil, fmt.Errorf("rendering node %s: %w", name, err)
		}
		c.Hosts[name], c.UserData[name] = h, ud
	}
	if err := s.CreateBucket(ctx, opts.Region, opts.Bucket); err != nil {
		return nil, err
	}
	c.Passwords = Passwords{Superuser: randomPassword(), Replication: randomPassword(), RESTAPI: randomPassword()}
	ssm := c.Hosts[names[0]].WithDefaults(c.Spec).SSM
	for name, value := range map[string]string{
		ssm.SuperuserPassword: c.Passwords.Superuser, ssm.ReplicationPassword: c.Passwords.Replication, ssm.RESTAPIPassword: c.Passwords.RESTAPI,
	} {
		if err := s.PutSecureString(ctx, opts.Region, name, value); err != nil {
			return nil, err
		}
	}
	if opts.TLS {
		if err := c.makeTLS(ctx, opts.TLSValidity); err != nil {
			return nil, err
		}
	}
	disks := 1
	if opts.NoDisks {
		disks = 0
	}
	for i, name := range names {
		n, err := s.AddNode(ctx, NodeSpec{Name: name, IP: s.NodeIP(i), UserData: c.UserData[name].Gzip(), Disks: disks})
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// randomPassword is 24 hex digits.
func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Boot boots the nodes at once and returns when every one has run cloud-init.
func (c *Cluster) Boot(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.Boot(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Node is the node named name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Member and Status are Patroni's GET /cluster, as internal/patroniapi reads it.
type (
	Member = patroniapi.Member
	Status = patroniapi.Status
)

// patroniURL is node n's Patroni REST API.
func (c *Cluster) patroniURL(n *Node) string {
	port := c.Hosts[n.Name].WithDefaults(c.Spec).Patroni.RESTAPIPort
	return c.scheme() + net.JoinHostPort(n.IP.String(), strconv.Itoa(port))
}

// scheme is the REST API's and etcd's: https with TLS.
func (c *Cluster) scheme() string {
	if c.TLS != nil {
		return "https://"
	}
	return "http://"
}

// Status is GET /cluster from the first running node whose Patroni answers.
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	var errs []error
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		var s Status
		if err := doJSON(ctx, c.client, http.MethodGet, c.patroniURL(n)+"/cluster", nil, &s); err != nil {
			errs = append(errs, err)
			continue
		}
		return s, nil
	}
	return Status{}, fmt.Errorf("no Patroni REST API answered: %w", errors.Join(errs...))
}

// PatroniNode is what a node's own Patroni reports (GET /patroni).
type PatroniNode struct {
	// Role is "primary", "replica", ...
	Role string `json:"role"`
	// State is PostgreSQL's: "running", "starting", "creating replica", ...
	State string `json:"state"`
	// ReplicationState is a replica's: "streaming", "in archive recovery", ...
	ReplicationState string `json:"replication_state"`
	Timeline         int    `json:"timeline"`
}

// Patroni is node n's own Patroni's view of itself (GET /patroni on n): unlike /cluster, which shows the
// members as the DCS last heard of them, it answers only while n's Patroni runs.
func (c *Cluster) Patroni(ctx context.Context, n *Node) (PatroniNode, error) {
	var v PatroniNode
	err := doJSON(ctx, c.client, http.MethodGet, c.patroniURL(n)+"/patroni", nil, &v)
	return v, err
}

// EtcdMembers are the names of the etcd members node n's etcd lists (etcd's v3 JSON gateway), after
// checking its /health.
func (c *Cluster) EtcdMembers(ctx context.Context, n *Node) ([]string, error) {
	port := c.Hosts[n.Name].WithDefaults(c.Spec).Etcd.ClientPort
	base := c.scheme() + net.JoinHostPort(n.IP.String(), strconv.Itoa(port))
	var h struct {
		Health string `json:"health"`
	}
	if err := doJSON(ctx, c.client, http.MethodGet, base+"/health", nil, &h); err != nil {
		return nil, err
	}
	if h.Health != "true" {
		return nil, fmt.Errorf("etcd on %s: health %q", n.Name, h.Health)
	}
	var list struct {
		Members []struct {
			Name       string   `json:"name"`
			ClientURLs []string `json:"clientURLs"`
		} `json:"members"`
	}
	if err := doJSON(ctx, c.client, http.MethodPost, base+"/v3/cluster/member/list", []byte("{}"), &list); err != nil {
		return nil, err
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
	}
	return names, nil
}

// ConnConfig is a pgx configuration for node n's PostgreSQL as the superuser over TCP, dialled from the
// service namespace.
func (c *Cluster) ConnConfig(n *Node) (*pgx.ConnConfig, error) {
	h := c.Hosts[n.Name].WithDefaults(c.Spec)
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=postgres sslmode=disable connect_timeout=5",
		n.IP, h.Port, h.Patroni.Superuser))
	if err != nil {
		return nil, err
	}
	cfg.Password = c.Passwords.Superuser
	cfg.DialFunc = c.Sim.DialContext
	if c.TLS != nil {
		// verify-full: the node's certificate, of the cluster's CA, names its address.
		cfg.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.TLS.Pool(), ServerName: n.IP.String()}
	}
	return cfg, nil
}

// Connect connects to node n's PostgreSQL as the superuser.
func (c *Cluster) Connect(ctx context.Context, n *Node) (*pgx.Conn, error) {
	cfg, err := c.ConnConfig(n)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Query runs sql on node n and returns the first column of the first row as text.
func (c *Cluster) Query(ctx context.Context, n *Node, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	conn, err := c.Connect(ctx, n)
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", n.Name, err)
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
		return "", fmt.Errorf("%s on %s: %w", sql, n.Name, err)
	}
	return v, nil
}

// Exec runs sql (no result rows) on node n.
func (c *Cluster) Exec(ctx context.Context, n *Node, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	conn, err := c.Connect(ctx, n)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", n.Name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s on %s: %w", sql, n.Name, err)
	}
	return nil
}

// doJSON sends method to url with client (from the root namespace) and decodes a 200 answer into v.
func doJSON(ctx context.Context, client *http.Client, method, url string, body []byte, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	return nil
}

// Logs is the end of each node's manager, cloud-init and unit logs, for failure messages.
func (c *Cluster) Logs(lines int) string {
	var b strings.Builder
	for _, n := range c.Nodes {
		b.WriteString(n.Logs(lines))
	}
	return b.String()
}
