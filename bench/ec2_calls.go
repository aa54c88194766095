package main

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// refreshCalls is what one refresh of the cluster (terraform plan -refresh-only) asked of AWS, of the
// nodes' Patroni REST APIs and of PostgreSQL, counted from the provider's own debug log: every AWS request
// attempt (awsclient.CallLogMessage), every request to a REST API (patroniclient.CallLogMessage) and every
// PostgreSQL session opened (pgclient.SessionLogMessage).
type refreshCalls struct {
	Seconds float64
	// By is the count per kind: an AWS service ("ec2", "s3", ...), "patroni" or "postgres".
	By map[string]int
	// Calls is the count per call: "ec2 DescribeInstances", "patroni GET /cluster", "postgres session".
	Calls map[string]int
}

// callFloor is the fewest calls of one kind that a refresh reporting what pgnvme_cluster reports needs,
// with what they read.
type callFloor struct {
	Kind  string
	Calls int
	Reads string
}

// refreshFloor is the bench cluster's floor per kind (pgBackRest archive, the provider's own security group
// and instance profile, no load balancer, no TLS, skip_credentials_validation as the simulator's provider
// block sets it) with nodes live nodes. Every fact a refresh reports is read once, by the one call that
// carries it; facts another answer already carries cost nothing.
func refreshFloor(walListPages, nodes int) []callFloor {
	return []callFloor{
		{"ec2", 3, "DescribeNetworkInterfaces (each node's interface, private IP and VPC, and the security group it is in), DescribeInstances (each node's instance, its state and AMI, and the instance profile it runs with) and DescribeVpcs (the VPC's range, which pg_hba admits when allowed_cidrs is unset)"},
		{"iam", 0, "nothing: the instance profile's name is in DescribeInstances' answer"},
		{"sts", 0, "nothing: the credential check (GetCallerIdentity, once per provider process) is skipped by skip_credentials_validation"},
		{"ssm", 1, "the superuser's password, for the one PostgreSQL session"},
		{"s3", walListPages + 2, fmt.Sprintf("the WAL listing (%d page(s) of 1,000 keys), backup.info (the base backups) and pgnvme's verification record", walListPages)},
		{"patroni", 2 + nodes, fmt.Sprintf("GET /cluster (every member's role, state, lag and timeline), GET /config (the dynamic configuration the plan compares) and each of the %d nodes' own GET /patroni (pending_restart exactly, where GET /cluster can be a loop late)", nodes)},
		{"postgres", 1, "one session on the leader: synchronous_standby_names, its WAL position and the archiver's failures"},
	}
}

var (
	logFields  = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S+)`)
	callKinds  = []string{awsclient.CallLogMessage, patroniclient.CallLogMessage, pgclient.SessionLogMessage}
	readRPCTag = "tf_rpc=ReadResource"
)

// countCalls counts the provider's call lines of a Terraform log made with TF_LOG_PROVIDER=DEBUG, those
// made while reading resources only.
func countCalls(log []byte) refreshCalls {
	c := refreshCalls{By: map[string]int{}, Calls: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		kind := ""
		for _, k := range callKinds {
			if strings.Contains(line, ": "+k+":") {
				kind = k
			}
		}
		if kind == "" || !strings.Contains(line, readRPCTag) {
			continue
		}
		f := map[string]string{}
		for _, m := range logFields.FindAllStringSubmatch(line, -1) {
			f[m[1]] = strings.Trim(m[2], `"`)
		}
		switch kind {
		case awsclient.CallLogMessage:
			c.By[f["service"]]++
			c.Calls[f["service"]+" "+f["operation"]]++
		case patroniclient.CallLogMessage:
			c.By["patroni"]++
			c.Calls["patroni "+f["method"]+" "+f["path"]]++
		default:
			c.By["postgres"]++
			c.Calls["postgres session"]++
		}
	}
	return c
}

// refresh runs one refresh with the provider's debug log on and counts its calls.
func (e *ec2Env) refresh() (refreshCalls, error) {
	logPath := filepath.Join(e.dir, "refresh.log")
	_ = os.Remove(logPath)
	start := time.Now()
	if err := e.terraformWith([]string{"TF_LOG_PROVIDER=DEBUG", "TF_LOG_PATH=" + logPath}, "plan", "-refresh-only", "-input=false", "-no-color"); err != nil {
		return refreshCalls{}, err
	}
	secs := time.Since(start).Seconds()
	b, err := os.ReadFile(logPath)
	if err != nil {
		return refreshCalls{}, err
	}
	c := countCalls(b)
	c.Seconds = secs
	if len(c.By) == 0 {
		return c, fmt.Errorf("the provider's debug log %s has no call lines: the counting no longer reads it", logPath)
	}
	return c, nil
}

// String is the count per call, in a stable order.
func (c refreshCalls) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.Calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.Calls[k]))
	}
	return strings.Join(parts, ", ")
}

// total is every call counted.
func (c refreshCalls) total() int {
	n := 0
	for _, v := range c.By {
		n += v
	}
	return n
}

func floorTotal(f []callFloor) int {
	n := 0
	for _, k := range f {
		n += k.Calls
	}
	return n
}

// refreshKindRow is one kind's calls over the runs beside its floor.
type refreshKindRow struct {
	Kind  string `json:"kind"`
	Calls Stat   `json:"calls"`
	Floor int    `json:"floor"`
	Reads string `json:"floor_reads"`
}

// byKind is each kind's calls over the runs, in the floor's order, then any kind the floor does not name.
func byKind(runs []ec2Run) []refreshKindRow {
	last := runs[len(runs)-1].refreshFloor
	var rows []refreshKindRow
	named := map[string]bool{}
	add := func(kind string, floor int, reads string) {
		var s []float64
		for _, r := range runs {
			s = append(s, float64(r.refresh.By[kind]))
		}
		rows = append(rows, refreshKindRow{Kind: kind, Calls: newStat(s), Floor: floor, Reads: reads})
		named[kind] = true
	}
	for _, f := range last {
		add(f.Kind, f.Calls, f.Reads)
	}
	for _, r := range runs {
		for _, k := range slices.Sorted(maps.Keys(r.refresh.By)) {
			if !named[k] {
				add(k, 0, "not expected in a refresh")
			}
		}
	}
	return rows
}
