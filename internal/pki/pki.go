// Package pki makes a cluster's certificates and decides when they are renewed. It is pure: keys and
// certificates go in and out as PEM, the time is the caller's, and nothing is read or written here
// (randomness aside). A cluster has one certificate authority; each node has a server certificate whose
// names are the addresses clients and members reach it at, and the cluster's superuser has a client
// certificate (its common name is the user name PostgreSQL's cert authentication maps it to).
//
// Keys are ECDSA P-256, as CloudNativePG's and cert-manager's defaults are: every client PostgreSQL
// supports them, and they keep handshakes cheap.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Pair is a certificate and its private key, both PEM.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Subject is who a certificate names: its common name, and (for a server) the DNS names and addresses
// it serves.
type Subject struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
}

// Usage is what a leaf certificate is for.
type Usage string

const (
	// Server certificates are presented by a node to its clients and members.
	Server Usage = "server"
	// Client certificates authenticate a user (their common name) to PostgreSQL.
	Client Usage = "client"
	// Member certificates are a node's on EC2: served to clients (PostgreSQL, Patroni's REST API, etcd) and
	// presented as a client to the other members' etcd (peer traffic and Patroni's DCS connections).
	Member Usage = "member"
)

// CAValidity is how long a cluster's certificate authority is valid: ten years, so that it outlives any
// cluster's certificates by far; leaves are short-lived and renewed by an apply.
const CAValidity = 10 * 365 * 24 * time.Hour

// backdate is how far before now a certificate's validity starts, so that a machine whose clock is a
// little behind the provider's accepts it at once.
const backdate = 5 * time.Minute

// NewCA makes a self-signed certificate authority named commonName, valid for CAValidity from now.
func NewCA(commonName string, now time.Time) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl, err := template(Subject{CommonName: commonName}, now, CAValidity)
	if err != nil {
		return Pair{}, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Pair{}, err
	}
	return encode(der, key)
}

// Issue makes a certificate for s, for usage, signed by ca, valid for validity from now (but never past
// the authority's own end).
func Issue(ca Pair, s Subject, usage Usage, now time.Time, validity time.Duration) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	return issue(ca, key, s, usage, now, validity)
}

// Reissue is Issue for the key keyPEM (an ECDSA key, as Issue makes them): the new certificate matches the
// key already in place, so a client that reads the certificate and the key while the certificate file is
// replaced gets a pair that matches, old or new.
func Reissue(ca Pair, keyPEM []byte, s Subject, usage Usage, now time.Time, validity time.Duration) (Pair, error) {
	k, err := parseKey(keyPEM)
	if err != nil {
		return Pair{}, err
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return Pair{}, fmt.Errorf("the key is a %T, not an ECDSA key", k)
	}
	return issue(ca, key, s, usage, now, validity)
}

func issue(ca Pair, key *ecdsa.PrivateKey, s Subject, usage Usage, now time.Time, validity time.Duration) (Pair, error) {
	caCert, err := ParseCert(ca.CertPEM)
	if err != nil {
		return Pair{}, fmt.Errorf("the certificate authority: %w", err)
	}
	caKey, err := parseKey(ca.KeyPEM)
	if err != nil {
		return Pair{}, fmt.Errorf("the certificate authority's key: %w", err)
	}
	tmpl, err := template(s, now, validity)
	if err != nil {
		return Pair{}, err
	}
	if tmpl.NotAfter.After(caCert.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	switch usage {
	case Server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = slices.Clone(s.DNSNames), slices.Clone(s.IPs)
	case Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case Member:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.DNSNames, tmpl.IPAddresses = slices.Clone(s.DNSNames), slices.Clone(s.IPs)
	default:
		return Pair{}, fmt.Errorf("certificate usage %q: use %q, %q or %q", usage, Server, Client, Member)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return Pair{}, err
	}
	return encode(der, key)
}

func template(s Subject, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: []string{"pgnvme"}},
		NotBefore:    now.Add(-backdate).UTC(),
		NotAfter:     now.Add(validity).UTC(),
	}, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (Pair, error) {
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
	}, nil
}

// ParseCert is the first certificate in pemBytes.
func ParseCert(pemBytes []byte) (*x509.Certificate, error) {
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM certificate found")
		}
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}

func parseKey(pemBytes []byte) (any, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		return nil, errors.New("no PEM key found")
	}
	switch b.Type {
	case "PRIVATE KEY":
		return x509.ParsePKCS8PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	}
	return nil, fmt.Errorf("unsupported PEM key type %q", b.Type)
}

// KeyMatches reports whether keyPEM is the private key of the certificate certPEM.
func KeyMatches(certPEM, keyPEM []byte) bool {
	c, err := ParseCert(certPEM)
	if err != nil {
		return false
	}
	k, err := parseKey(keyPEM)
	if err != nil {
		return false
	}
	pub, ok := k.(crypto.Signer)
	if !ok {
		return false
	}
	eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(c.PublicKey)
}

// NewKey makes a private key (ECDSA P-256, PEM) for a certificate another authority issues from a
// request (Request).
func NewKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}

// Request is a certificate signing request (PEM) for s with the key keyPEM: its subject and, for a
// server or member, the names and addresses it serves (an authority such as ACM Private CA passes them
// through into the certificate).
func Request(keyPEM []byte, s Subject, usage Usage) ([]byte, error) {
	k, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the key is a %T, which cannot sign", k)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: s.CommonName, Organization: []string{"pgnvme"}}}
	switch usage {
	case Server, Member:
		tmpl.DNSNames, tmpl.IPAddresses = slices.Clone(s.DNSNames), slices.Clone(s.IPs)
	case Client:
	default:
		return nil, fmt.Errorf("certificate usage %q: use %q, %q or %q", usage, Server, Client, Member)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, signer)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// Certs are every certificate in pemBytes, in order.
func Certs(pemBytes []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}
