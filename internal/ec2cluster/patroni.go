package ec2cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

// patroniClient talks to Patroni's REST API on the nodes.
type patroniClient struct {
	http *http.Client
	port int
}

func newPatroniClient(port int) *patroniClient {
	return &patroniClient{port: port, http: &http.Client{Timeout: 5 * time.Second}}
}

func (p *patroniClient) url(host, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(p.port)) + path
}

// cluster reads GET /cluster from the first of hosts that answers; the error says what each host answered
// when none did.
func (p *patroniClient) cluster(ctx context.Context, hosts []string) (patroniapi.Status, string, error) {
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

// switchover asks Patroni (on host) to hand the leader role from leader to candidate, now.
func (p *patroniClient) switchover(ctx context.Context, host, leader, candidate, user, password string) error {
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

// config reads the cluster's dynamic configuration, GET /config, on host.
func (p *patroniClient) config(ctx context.Context, host string) (map[string]any, error) {
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

// patchConfig merges patch into the cluster's dynamic configuration (PATCH /config on host); every
// member's Patroni applies it in its next loop, reloading PostgreSQL.
func (p *patroniClient) patchConfig(ctx context.Context, host string, patch map[string]any, user, password string) error {
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

// restart asks the Patroni on host to restart its PostgreSQL now; Patroni answers once it has.
func (p *patroniClient) restart(ctx context.Context, host, user, password string) error {
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

// nodeState is what a node's own Patroni says of it (GET /patroni).
type nodeState struct {
	State            string `json:"state"`
	Role             string `json:"role"`
	ReplicationState string `json:"replication_state"`
	// PostmasterStartTime is when PostgreSQL started, as "2006-01-02 15:04:05.999999+00:00".
	PostmasterStartTime string `json:"postmaster_start_time"`
	// PendingRestart is true while PostgreSQL runs with settings only a restart applies, which
	// PendingRestartReason names.
	PendingRestart       bool                       `json:"pending_restart"`
	PendingRestartReason map[string]json.RawMessage `json:"pending_restart_reason"`
}

// startedAfter reports whether PostgreSQL started after t.
func (n nodeState) startedAfter(t time.Time) bool {
	started, err := time.Parse("2006-01-02 15:04:05.999999-07:00", n.PostmasterStartTime)
	return err == nil && started.After(t)
}

// node reads GET /patroni on host. Patroni answers 200 when PostgreSQL runs and 503 otherwise, both with
// the document.
func (p *patroniClient) node(ctx context.Context, host string) (nodeState, error) {
	b, status, err := p.do(ctx, http.MethodGet, host, "/patroni", nil, "", "")
	if err != nil {
		return nodeState{}, err
	}
	var st nodeState
	if err := json.Unmarshal(b, &st); err != nil {
		return nodeState{}, fmt.Errorf("GET /patroni on %s: HTTP %d: %w", host, status, err)
	}
	return st, nil
}

// long is the client for calls that Patroni answers only once it is done (a switchover, a restart): the
// same transport, no timeout of its own (the caller's context bounds it).
func (p *patroniClient) long() *http.Client {
	return &http.Client{Transport: p.http.Transport}
}

func (p *patroniClient) do(ctx context.Context, method, host, path string, body []byte, user, password string) ([]byte, int, error) {
	return p.doWith(ctx, p.http, method, host, path, body, user, password)
}

func (p *patroniClient) doWith(ctx context.Context, client *http.Client, method, host, path string, body []byte, user, password string) ([]byte, int, error) {
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
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return b, resp.StatusCode, err
}
