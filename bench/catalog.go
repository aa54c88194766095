package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// CatalogBench measures pgnvme_instance_types with source = "ec2" against moto: plan time and the AWS API
// calls made, counted by a proxy in front of moto, against the floor.
type CatalogBench struct {
	EmbeddedSeconds  Stat      `json:"embedded_seconds"`
	LiveSeconds      Stat      `json:"live_seconds"`
	LiveTwiceSeconds Stat      `json:"live_twice_seconds"`
	CallsOne         CallCount `json:"calls_one_data_source"`
	CallsTwo         CallCount `json:"calls_two_data_sources"`
	FloorCalls       int       `json:"floor_calls"`
	FloorDescription string    `json:"floor_description"`
}

const catalogFilters = `
  min_nvme_gib        = 900
  architectures       = ["x86_64"]
  offered_in_zone_ids = ["use1-az1", "use1-az2", "use1-az4"]
`

func catalogConfig(endpoint, source string, copies int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
provider "pgnvme" {
  region                      = "us-east-1"
  skip_credentials_validation = true
  endpoints {
    ec2 = %q
    sts = %q
  }
}
`, endpoint, endpoint)
	for i := 0; i < copies; i++ {
		fmt.Fprintf(&b, "data \"pgnvme_instance_types\" \"q%d\" {\n  source = %q\n%s}\n", i, source, catalogFilters)
		fmt.Fprintf(&b, "output \"n%d\" { value = length(data.pgnvme_instance_types.q%d.names) }\n", i, i)
	}
	return b.String()
}

func benchCatalog(env *terraformEnv, runs int) (*CatalogBench, error) {
	progress("catalog against moto: starting moto")
	moto, err := acctest.LaunchMoto()
	if err != nil {
		return nil, err
	}
	defer moto.Stop()
	proxy, err := newCountingProxy(moto.URL)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	creds := []string{"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing"}
	dirs := map[string]string{}
	for name, cfg := range map[string]string{
		"embedded": catalogConfig(proxy.URL, "embedded", 1),
		"live":     catalogConfig(proxy.URL, "ec2", 1),
		"live_two": catalogConfig(proxy.URL, "ec2", 2),
	} {
		d, err := env.workspace("catalog-"+name, map[string]string{"main.tf": cfg})
		if err != nil {
			return nil, err
		}
		dirs[name] = d
	}

	b := &CatalogBench{
		FloorCalls: 2,
		FloorDescription: "one DescribeInstanceTypes (server-side filter, paginated; moto returns one page) + " +
			"one DescribeInstanceTypeOfferings",
	}
	var embedded, live, liveTwo []float64
	for i := 0; i < runs; i++ {
		progress("catalog against moto: run %d/%d", i+1, runs)
		r, err := env.plan(dirs["embedded"], creds...)
		if err != nil {
			return nil, err
		}
		embedded = append(embedded, r.Seconds)
		if n := proxy.Take().Total; n != 0 {
			return nil, fmt.Errorf("the embedded source made %d AWS calls; it must make none", n)
		}

		r, err = env.plan(dirs["live"], creds...)
		if err != nil {
			return nil, err
		}
		live = append(live, r.Seconds)
		b.CallsOne = proxy.Take()

		r, err = env.plan(dirs["live_two"], creds...)
		if err != nil {
			return nil, err
		}
		liveTwo = append(liveTwo, r.Seconds)
		b.CallsTwo = proxy.Take()
	}
	b.EmbeddedSeconds = newStat(embedded)
	b.LiveSeconds = newStat(live)
	b.LiveTwiceSeconds = newStat(liveTwo)
	return b, nil
}

// countingProxy forwards to moto and counts AWS API calls by action (query protocol `Action=` or JSON
// protocol `X-Amz-Target`).
type countingProxy struct {
	URL string
	srv *http.Server
	ln  net.Listener

	mu     sync.Mutex
	counts map[string]int
}

func newCountingProxy(target string) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{URL: "http://" + ln.Addr().String(), ln: ln, counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		action := r.Header.Get("X-Amz-Target")
		if action == "" {
			if form, err := url.ParseQuery(string(body)); err == nil {
				action = form.Get("Action")
			}
		}
		if action == "" {
			action = r.Method + " " + r.URL.Path
		}
		p.mu.Lock()
		p.counts[action]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Take returns the calls counted since the last Take and starts counting afresh.
func (p *countingProxy) Take() CallCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := CallCount{ByAction: p.counts}
	for _, n := range p.counts {
		c.Total += n
	}
	p.counts = map[string]int{}
	return c
}

func (p *countingProxy) Close() { _ = p.srv.Close() }
