package bootstrap

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
)

// A node's TLS bundle (EC2Node.TLS) is one SecureString, SSMParameters.TLS, that secrets.sh splits into the
// node's files: PEM blocks in this order, the node's private key, its member certificate (served by
// PostgreSQL, Patroni's REST API and etcd, and presented to the other etcd members and by Patroni to
// etcd), its replication client certificate (the same key; its common name is the replication user,
// which pg_hba's cert method checks), and the cluster's CA certificate. About 2 KiB with P-256 keys, well
// within a standard parameter's 4 KiB.

// TLSFiles are a TLS bundle's parts, each PEM.
type TLSFiles struct {
	Key, Member, Replication, CA []byte
}

// TLSBundle is the bundle of f: its blocks in the order secrets.sh reads them.
func TLSBundle(f TLSFiles) (string, error) {
	if _, err := ParseTLSBundle(string(bytes.Join([][]byte{f.Key, f.Member, f.Replication, f.CA}, nil))); err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, p := range [][]byte{f.Key, f.Member, f.Replication, f.CA} {
		b.Write(bytes.TrimSpace(p))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// ParseTLSBundle splits a bundle into its parts; the error says what is missing or out of place.
func ParseTLSBundle(s string) (TLSFiles, error) {
	var f TLSFiles
	var certs [][]byte
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		enc := pem.EncodeToMemory(b)
		switch b.Type {
		case "PRIVATE KEY":
			if f.Key != nil {
				return TLSFiles{}, errors.New("the TLS bundle holds two private keys")
			}
			f.Key = enc
		case "CERTIFICATE":
			certs = append(certs, enc)
		default:
			return TLSFiles{}, fmt.Errorf("the TLS bundle holds a %s block; it holds a PRIVATE KEY and CERTIFICATE blocks only", b.Type)
		}
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return TLSFiles{}, errors.New("the TLS bundle holds text that is not PEM")
	}
	if f.Key == nil || len(certs) < 3 {
		return TLSFiles{}, fmt.Errorf("the TLS bundle holds %d private key(s) and %d certificate(s); it needs the node's key and its member, replication and CA certificates", boolInt(f.Key != nil), len(certs))
	}
	// The authority's certificate, then its chain up to the root when it is a subordinate (ACM Private CA).
	f.Member, f.Replication, f.CA = certs[0], certs[1], bytes.Join(certs[2:], nil)
	return f, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ec2TLSPaths are the node's TLS files as the templates and Patroni's configuration name them.
// Group is the group that reads them (the postgres user, and etcd on etcd members).
type ec2TLSPaths struct {
	Dir, CA, Cert, Key, ReplicationCert, Group string
}

func newEC2TLSPaths() ec2TLSPaths {
	return ec2TLSPaths{
		Dir: ec2TLSDir, CA: path.Join(ec2TLSDir, "ca.crt"), Cert: path.Join(ec2TLSDir, "node.crt"), Key: path.Join(ec2TLSDir, "node.key"),
		ReplicationCert: path.Join(ec2TLSDir, "replication.crt"), Group: "pgnvme-tls",
	}
}

// ec2TLSParameters are the PostgreSQL settings of a node with TLS; they stay in the node's own
// configuration (the files are the user-data's).
func ec2TLSParameters(p ec2TLSPaths) map[string]string {
	return map[string]string{
		"ssl": "on", "ssl_cert_file": p.Cert, "ssl_key_file": p.Key, "ssl_ca_file": p.CA,
		"ssl_min_protocol_version": "TLSv1.2",
	}
}
