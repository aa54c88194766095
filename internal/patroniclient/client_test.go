package patroniclient_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniclient"
)

// client sends every request to srv, whatever host it names (as a node's address would).
func client(t *testing.T, h http.Handler) *patroniclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := patroniclient.New(8008)
	c.HTTP.Transport = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "198.18.0.1:") {
			return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError("unreachable")}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	return c
}

// GET /cluster falls through to the next host when one does not answer, and says which answered; the
// unsafe calls carry the REST API's user; a switchover Patroni stopped waiting for (503 "status unknown")
// is left to the caller to watch; a call Patroni does not answer with 200 is an error naming it.
func TestClient(t *testing.T) {
	var auth []string
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, _, ok := r.BasicAuth(); ok {
			auth = append(auth, r.Method+" "+r.URL.Path+" "+u)
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /cluster":
			_, _ = w.Write([]byte(`{"members": [{"name": "node-1", "role": "leader", "state": "running"}]}`))
		case "GET /patroni":
			w.WriteHeader(http.StatusServiceUnavailable) // PostgreSQL down: the document still comes
			_, _ = w.Write([]byte(`{"state": "stopped", "role": "replica", "pending_restart": true, "pending_restart_reason": {"shared_buffers": {"old_value": "64MB", "new_value": "96MB"}},
				"timeline": 6, "xlog": {"received_location": 285305984, "replayed_location": 285305856, "replayed_timestamp": null, "paused": false}}`))
		case "POST /switchover":
			http.Error(w, "Switchover status unknown", http.StatusServiceUnavailable)
		case "POST /failover":
			body, _ := io.ReadAll(r.Body)
			if string(body) != `{"candidate":"node-2"}` {
				http.Error(w, "Failover could be performed only to a specific candidate", http.StatusBadRequest)
				return
			}
			http.Error(w, "Failover status unknown", http.StatusServiceUnavailable)
		case "PATCH /config", "POST /restart":
			_, _ = w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	ctx := context.Background()
	st, from, err := c.Cluster(ctx, []string{"198.18.0.1", "198.18.0.2"})
	if l, ok := st.Leader(); err != nil || from != "198.18.0.2" || !ok || l.Name != "node-1" {
		t.Errorf("Cluster: %+v from %s, %v; want node-1 leading, read from the second host", st, from, err)
	}
	if _, _, err := c.Cluster(ctx, []string{"198.18.0.1"}); err == nil || !strings.Contains(err.Error(), "198.18.0.1") {
		t.Errorf("Cluster with no host answering: %v; want an error naming the host", err)
	}
	n, err := c.Node(ctx, "198.18.0.2")
	if err != nil || n.State != "stopped" || !n.PendingRestart || len(n.PendingRestartReason) != 1 || n.Timeline != 6 ||
		n.XLog.ReceivedLocation != 0x11016C80 || n.XLog.ReplayedLocation != 0x11016C00 || n.XLog.Location != 0 {
		t.Errorf("Node: %+v, %v; want the 503's document", n, err)
	}
	if err := c.Switchover(ctx, "198.18.0.2", "node-1", "node-2", "patroni", "pw"); err != nil {
		t.Errorf("Switchover with status unknown: %v; want nil (the caller watches the leader)", err)
	}
	if err := c.Failover(ctx, "198.18.0.2", "node-2", "patroni", "pw"); err != nil {
		t.Errorf("Failover with status unknown: %v; want nil (the caller watches the leader)", err)
	}
	if err := c.Failover(ctx, "198.18.0.2", "", "patroni", "pw"); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("Failover refused: %v; want an error with Patroni's answer", err)
	}
	if err := c.PatchConfig(ctx, "198.18.0.2", map[string]any{"ttl": 20}, "patroni", "pw"); err != nil {
		t.Errorf("PatchConfig: %v", err)
	}
	if err := c.Restart(ctx, "198.18.0.2", "patroni", "pw"); err != nil {
		t.Errorf("Restart: %v", err)
	}
	if strings.Join(auth, ",") != "POST /switchover patroni,POST /failover patroni,POST /failover patroni,PATCH /config patroni,POST /restart patroni" {
		t.Errorf("authenticated calls %v; want the unsafe ones", auth)
	}
	if _, err := c.Config(ctx, "198.18.0.2"); err == nil || !strings.Contains(err.Error(), "GET /config") {
		t.Errorf("Config of a 404: %v; want an error naming the call", err)
	}
}

// Every request is one debug line (patroniclient.CallLogMessage) with its method, host, path and status, or
// the error when the host did not answer; never the password.
func TestClient_logsEveryRequest(t *testing.T) {
	received := 0
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received++
		_, _ = w.Write([]byte(`{"members": [{"name": "node-1", "role": "leader", "state": "running"}]}`))
	}))
	var logged bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &logged)
	if _, _, err := c.Cluster(ctx, []string{"198.18.0.1", "198.18.0.2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, "198.18.0.2", "patroni", "secret-pw"); err != nil {
		t.Fatal(err)
	}
	entries, err := tflogtest.MultilineJSONDecode(&logged)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e["@message"] == patroniclient.CallLogMessage {
			line := fmt.Sprint(e["method"], " ", e["host"], e["path"], " ", e["status"])
			if e["error"] != nil {
				line = fmt.Sprint(e["method"], " ", e["host"], e["path"], " unanswered")
			}
			got = append(got, line)
		}
	}
	want := []string{"GET 198.18.0.1/cluster unanswered", "GET 198.18.0.2/cluster 200", "POST 198.18.0.2/restart 200"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") || received != 2 {
		t.Errorf("logged %q with %d requests received; want %q", got, received, want)
	}
	if strings.Contains(logged.String(), "secret-pw") {
		t.Error("the log holds the REST API's password")
	}
}
