package awsclient_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

// Every request the adapter sends to AWS is one debug line (awsclient.CallLogMessage) naming its service,
// operation and status, retried attempts included: a proxy in front of moto counts what really arrives,
// and fails the first request with a 500 so the SDK retries it.
func TestCallLog_everyAttempt(t *testing.T) {
	m := startMotoIsolated(t)
	target, err := url.Parse(m.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	seen := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen++
		first := seen == 1
		mu.Unlock()
		if first {
			http.Error(w, `{"__type":"InternalServerError","message":"dropped by the test"}`, http.StatusInternalServerError)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	var logged bytes.Buffer
	ctx := tflogtest.RootLogger(t.Context(), &logged)
	ep := awsclient.Endpoints{EC2: srv.URL, IAM: srv.URL, STS: srv.URL, SSM: srv.URL, S3: srv.URL, ELBV2: srv.URL}
	cloud, err := awsclient.NewCloud(ctx, awsclient.New(awsclient.Config{Region: "us-east-1", Endpoints: ep}), "us-east-1")
	if err != nil {
		t.Fatalf("NewCloud: %v", err)
	}
	if _, err := cloud.Secret(ctx, "/pgnvme/tf-acc-calllog/missing"); !errors.Is(err, awsclient.ErrNotFound) {
		t.Fatalf("Secret of a missing parameter: %v, want ErrNotFound", err)
	}
	if _, err := cloud.Instances(ctx, "tf-acc-calllog"); err != nil {
		t.Fatalf("Instances: %v", err)
	}

	entries, err := tflogtest.MultilineJSONDecode(&logged)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	calls := map[string]int{}
	for _, e := range entries {
		if e["@message"] == awsclient.CallLogMessage {
			lines = append(lines, e)
			calls[e["service"].(string)+" "+e["operation"].(string)]++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != seen {
		t.Errorf("%d request lines logged, the proxy received %d requests: %v", len(lines), seen, calls)
	}
	if len(lines) == 0 || lines[0]["status"] != float64(http.StatusInternalServerError) {
		t.Errorf("the first line %v, want the dropped attempt's status 500", lines)
	}
	if calls["sts GetCallerIdentity"] < 1 || calls["ssm GetParameter"] != 1 || calls["ec2 DescribeInstances"] != 1 {
		t.Errorf("calls %v: want the credential check (its first attempt dropped, then retried), one GetParameter and one DescribeInstances", calls)
	}
}
