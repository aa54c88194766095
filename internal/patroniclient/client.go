// Package patroniclient is the adapter for Patroni's REST API on a cluster's nodes: HTTP requests in,
// patroniapi's model out. The EC2 platform reaches it through the interface it declares.
package patroniclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

// CallLogMessage is the debug log's message for every request sent to a Patroni REST API (with
// TF_LOG_PROVIDER=DEBUG; `make bench` counts them).
const CallLogMessage = "patroni request"

// Client talks to Patroni's REST API at port on the nodes. HTTP is the client for reads (with a short
// timeout); its Transport also carries the calls Patroni answers only once done (switchover, restart).
type Client struct {
	HTTP *http.Client
	Port int
	// Scheme is "http", or "https" for a REST API that serves TLS (WithTLS); "" means "http".
	Scheme string
}

// New is a client of Patroni's REST API at port.
func New(port int) *Client {
	return &Client{Port: port, HTTP: &http.Client{Timeout: 5 * time.Second}}
}

// WithTLS is a client of the same port for REST APIs that serve https with a certificate issued by one of
// roots, for the node's address (the host each call names): plain http is never tried, so a password sent
// to an unsafe endpoint crosses the network encrypted only.
func (p *Client) WithTLS(roots *x509.CertPool) *Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		t = &http.Transport{}
	}
	t = t.Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	return &Client{Port: p.Port, Scheme: "https", HTTP: &http.Client{Timeout: p.HTTP.Timeout, Transport: t}}
}

// ServedCertificate is the certificate host's REST API serves, verified against the client's roots for
// host (WithTLS's client only).
func (p *Client) ServedCertificate(ctx context.Context, host string) (*x509.Certificate, error) {
	t, ok := p.HTTP.Transport.(*http.Transport)
	if p.Scheme != "https" || !ok || t.TLSClientConfig == nil {
		return nil, errors.New("the Patroni client has no TLS: use WithTLS")
	}
	cfg := t.TLSClientConfig.Clone()
	cfg.ServerName = host
	d := tls.Dialer{Config: cfg, NetDialer: &net.Dialer{Timeout: p.HTTP.Timeout}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(p.Port)))
	if err != nil {
		return nil, fmt.Errorf("TLS handshake with Patroni's REST API at %s: %w", host, err)
	}
	defer conn.Close()
	tc, ok := conn.(*tls.Conn)
	if !ok || len(tc.ConnectionState().PeerCertificates) == 0 {
		return nil, fmt.Errorf("the Patroni REST API at %s presented no certificate", host)
	}
	return tc.ConnectionState().PeerCertificates[0], nil
}

func (p *Client) url(host, path string) string {
	scheme := p.Scheme
	if scheme == "" {
		scheme = "http"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(p.Port)) + path
}

// Cluster reads GET /cluster from the first of hosts that answers; the error says what each host answered
// when none did.
func (p *Client) Cluster(ctx context.Context, hosts []string) (patroniapi.Status, string, error) {
	var errs []error
	for _, h := range hosts {
		b, status, err := p.do(ctx, http.MethodGet, h, "/cluster", nil, "", "")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(b))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h, err))
			continue
		}
		st, err := patroniapi.Decode(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h, err))
			continue
		}
		return st, h, nil
	}
	return patroniapi.Status{}, "", fmt.Errorf("no node's Patroni REST API answered GET /cluster: %w", errors.Join(errs...))
}

// Switchover asks Patroni (on host) to hand the leader role from leader to candidate, now.
func (p *Client) Switchover(ctx context.Context, host, leader, candidate, user, password string) error {
	body, _ := json.Marshal(map[string]string{"leader": leader, "candidate": candidate})
	// Patroni answers once the switchover is done, which takes longer than a read.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, status, err := p.doWith(ctx, p.long(), http.MethodPost, host, "/switchover", body, user, password)
	if err != nil {
		return fmt.Errorf("switchover from %s to %s: %w", leader, candidate, err)
	}
	switch {
	case status == http.StatusOK:
	case status == http.StatusServiceUnavailable && bytes.Contains(b, []byte("status unknown")):
		// Patroni stopped waiting for the outcome; the caller watches the leader change.
	default:
		return fmt.Errorf("switchover from %s to %s: Patroni answered HTTP %d: %s", leader, candidate, status, bytes.TrimSpace(b))
	}
	return nil
}

// Failover asks the Patroni on host to make candidate the leader of a cluster without one (POST /failover
// with a candidate and no leader): Patroni writes the failover key, and candidate's Patroni takes the
// leader lock at its next loop once no leader holds it, whatever its synchronous mode's quorum says.
// Patroni answers once candidate leads, or 503 "status unknown" when it stopped waiting: the caller
// watches the leader either way.
func (p *Client) Failover(ctx context.Context, host, candidate, user, password string) error {
	body, _ := json.Marshal(map[string]string{"candidate": candidate})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, status, err := p.doWith(ctx, p.long(), http.MethodPost, host, "/failover", body, user, password)
	if err != nil {
		return fmt.Errorf("failover to %s: %w", candidate, err)
	}
	switch {
	case status == http.StatusOK:
	case status == http.StatusServiceUnavailable && bytes.Contains(b, []byte("status unknown")):
	default:
		return fmt.Errorf("failover to %s: Patroni answered HTTP %d: %s", candidate, status, bytes.TrimSpace(b))
	}
	return nil
}

// Config reads the cluster's dynamic configuration, GET /config, on host.
func (p *Client) Config(ctx context.Context, host string) (map[string]any, error) {
	b, status, err := p.do(ctx, http.MethodGet, host, "/config", nil, "", "")
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(b))
	}
	if err != nil {
		return nil, fmt.Errorf("GET /config on %s: %w", host, err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("GET /config on %s: %w", host, err)
	}
	return out, nil
}

// PatchConfig merges patch into the cluster's dynamic configuration (PATCH /config on host); every
// member's Patroni applies it in its next loop, reloading PostgreSQL.
func (p *Client) PatchConfig(ctx context.Context, host string, patch map[string]any, user, password string) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	b, status, err := p.do(ctx, http.MethodPatch, host, "/config", body, user, password)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(b))
	}
	if err != nil {
		return fmt.Errorf("PATCH /config on %s: %w", host, err)
	}
	return nil
}

// Restart asks the Patroni on host to restart its PostgreSQL now; Patroni answers once it has.
func (p *Client) Restart(ctx context.Context, host, user, password string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	b, status, err := p.doWith(ctx, p.long(), http.MethodPost, host, "/restart", []byte("{}"), user, password)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(b))
	}
	if err != nil {
		return fmt.Errorf("POST /restart on %s: %w", host, err)
	}
	return nil
}

// Node reads GET /patroni on host. Patroni answers 200 when PostgreSQL runs and 503 otherwise, both with
// the document.
func (p *Client) Node(ctx context.Context, host string) (patroniapi.NodeState, error) {
	b, status, err := p.do(ctx, http.MethodGet, host, "/patroni", nil, "", "")
	if err != nil {
		return patroniapi.NodeState{}, err
	}
	var st patroniapi.NodeState
	if err := json.Unmarshal(b, &st); err != nil {
		return patroniapi.NodeState{}, fmt.Errorf("GET /patroni on %s: HTTP %d: %w", host, status, err)
	}
	return st, nil
}

// long is the client for calls that Patroni answers only once it is done (a switchover, a restart): the
// same transport, no timeout of its own (the caller's context bounds it).
func (p *Client) long() *http.Client {
	return &http.Client{Transport: p.HTTP.Transport}
}

func (p *Client) do(ctx context.Context, method, host, path string, body []byte, user, password string) ([]byte, int, error) {
	return p.doWith(ctx, p.HTTP, method, host, path, body, user, password)
}

func (p *Client) doWith(ctx context.Context, client *http.Client, method, host, path string, body []byte, user, password string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.url(host, path), bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := client.Do(req)
	fields := map[string]any{"method": method, "host": host, "path": path}
	if err != nil {
		fields["error"] = err.Error()
		tflog.Debug(ctx, CallLogMessage, fields)
		return nil, 0, err
	}
	defer resp.Body.Close()
	fields["status"] = resp.StatusCode
	tflog.Debug(ctx, CallLogMessage, fields)
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return b, resp.StatusCode, err
}
