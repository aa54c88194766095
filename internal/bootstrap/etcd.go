package bootstrap

import (
	"crypto/sha1"
	"encoding/binary"
	"net"
	"sort"
	"strconv"
	"strings"
)

// etcdMember is one etcd member of the cluster.
type etcdMember struct {
	name      string
	ip        string
	peerURL   string
	clientURL string
	// bootstrapID is the member ID etcd gives this member in the cluster's
	// first start (initial-cluster-state "new"), in etcdctl's hex form.
	bootstrapID string
}

// etcdToken is the etcd cluster's initial-cluster-token.
func etcdToken(c Cluster) string {
	return "pgnvme-" + c.Name
}

// etcdMembers are the cluster's etcd members: the first n.Etcd.Members nodes
// in priority order, with the IPs from n (itself and its peers).
func etcdMembers(c Cluster, n EC2Node) []etcdMember {
	ips := map[string]string{n.Name: n.PrivateIP}
	for _, p := range n.Peers {
		ips[p.Name] = p.IP
	}
	scheme := "http://"
	if n.TLS {
		scheme = "https://"
	}
	var out []etcdMember
	for _, name := range c.Nodes[:min(n.Etcd.Members, len(c.Nodes))] {
		ip := ips[name]
		m := etcdMember{
			name:      name,
			ip:        ip,
			peerURL:   scheme + net.JoinHostPort(ip, strconv.Itoa(n.Etcd.PeerPort)),
			clientURL: scheme + net.JoinHostPort(ip, strconv.Itoa(n.Etcd.ClientPort)),
		}
		m.bootstrapID = etcdMemberID([]string{m.peerURL}, etcdToken(c))
		out = append(out, m)
	}
	return out
}

// etcdMemberID is the ID etcd computes for a member of a new cluster
// (membership.computeMemberID with no time, as NewClusterFromURLsMap calls
// it): the first 8 bytes, big-endian, of the SHA-1 of the member's sorted
// peer URLs joined with nothing, then the cluster token; printed by etcdctl
// in hex without leading zeros.
func etcdMemberID(peerURLs []string, token string) string {
	urls := append([]string(nil), peerURLs...)
	sort.Strings(urls)
	sum := sha1.Sum([]byte(strings.Join(urls, "") + token))
	return strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 16)
}

// etcdInitialCluster is ETCD_INITIAL_CLUSTER for members: name=peer URL, in
// order, comma-separated.
func etcdInitialCluster(members []etcdMember) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m.name + "=" + m.peerURL
	}
	return strings.Join(parts, ",")
}
