package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Member and Status are Patroni's GET /cluster, as internal/patroniapi reads it.
type (
	Member = patroniapi.Member
	Status = patroniapi.Status
)

// Status is GET /cluster from the first node whose REST API answers.
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	var errs []error
	for _, n := range c.Nodes {
		var s Status
		err := getJSON(ctx, n.RESTURL()+"/cluster", &s)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return Status{}, fmt.Errorf("no Patroni REST API answered: %w", errors.Join(errs...))
}

// RESTURL is n's Patroni REST API (http://127.0.0.1:PORT).
func (n *Node) RESTURL() string { return "http://127.0.0.1:" + strconv.Itoa(n.RESTPort) }

// Wait polls /cluster until cond returns nil (its error is the reason to wait on) and returns that status; it
// fails the test after timeout with the last reason and the end of every node's logs.
func (c *Cluster) Wait(t testing.TB, what string, timeout time.Duration, cond func(Status) error) Status {
	t.Helper()
	s, err := c.wait(what, timeout, cond)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs(15))
	}
	return s
}

func (c *Cluster) wait(what string, timeout time.Duration, cond func(Status) error) (Status, error) {
	return PollStatus(what, timeout, pollInterval, c.Status, cond)
}

// PollStatus reads /cluster with status every interval until cond returns nil (its error is the reason to wait
// on, given with the status read) and returns that status; after timeout, the last status and wait's error. For
// any cluster whose /cluster a test reads: this fixture's, or the node simulator's.
func PollStatus(what string, timeout, interval time.Duration, status func(context.Context) (Status, error), cond func(Status) error) (Status, error) {
	var last Status
	err := wait.Until(context.Background(), what, timeout, interval, wait.Real, func(ctx context.Context) (bool, error) {
		s, err := status(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		last = s
		if err := cond(s); err != nil {
			return false, wait.NotYet(fmt.Errorf("%w; /cluster %s", err, s))
		}
		return true, nil
	})
	return last, err
}

// QuorumOf is a wait condition: n members, one running leader and every other one a streaming quorum standby.
func QuorumOf(n int) func(Status) error {
	return func(s Status) error {
		if len(s.Members) != n {
			return fmt.Errorf("%d members, want %d", len(s.Members), n)
		}
		for _, m := range s.Members {
			switch {
			case m.Role == patroniapi.RoleLeader && m.State == patroniapi.StateRunning:
			case m.Role == patroniapi.RoleQuorumStandby && m.State == patroniapi.StateStreaming:
			default:
				return fmt.Errorf("%s is %s/%s", m.Name, m.Role, m.State)
			}
		}
		if _, ok := s.Leader(); !ok {
			return errors.New("no leader")
		}
		return nil
	}
}

// WaitLeader waits until a member other than those named in not is the leader, its PostgreSQL runs and is out
// of recovery (pg_is_in_recovery() = false), and returns its node.
func (c *Cluster) WaitLeader(t testing.TB, timeout time.Duration, not ...string) *Node {
	t.Helper()
	var leader *Node
	c.Wait(t, "a leader taking writes", timeout, func(s Status) error {
		m, ok := s.Leader()
		switch {
		case !ok:
			return errors.New("no leader")
		case slices.Contains(not, m.Name):
			return fmt.Errorf("%s is still the leader", m.Name)
		case m.State != patroniapi.StateRunning:
			return fmt.Errorf("leader %s is %s", m.Name, m.State)
		}
		n := c.Node(t, m.Name)
		out, err := n.TryPsql("", "SELECT pg_is_in_recovery()")
		if err != nil {
			return err
		}
		if out != "f" {
			return fmt.Errorf("leader %s: pg_is_in_recovery() = %s", m.Name, out)
		}
		leader = n
		return nil
	})
	return leader
}

// WaitStreaming waits until every node whose Patroni runs is a member, one of them the running leader and
// every other one streaming from it, and returns that status.
func (c *Cluster) WaitStreaming(t testing.TB, timeout time.Duration) Status {
	t.Helper()
	return c.Wait(t, "every running node streaming from the leader", timeout, func(s Status) error {
		if _, ok := s.Leader(); !ok {
			return errors.New("no leader")
		}
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			m, ok := s.Member(n.Name)
			switch {
			case !ok:
				return fmt.Errorf("%s is not a member", n.Name)
			case m.Role == patroniapi.RoleLeader && m.State != patroniapi.StateRunning:
				return fmt.Errorf("leader %s is %s", m.Name, m.State)
			case m.Role != patroniapi.RoleLeader && m.State != patroniapi.StateStreaming:
				return fmt.Errorf("%s is %s", m.Name, m.State)
			}
		}
		return nil
	})
}

// Logs is the last lines of etcd's log and of each node's Patroni and PostgreSQL logs, for failure messages.
func (c *Cluster) Logs(lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n%s\n", c.etcdLog, localnode.TailFile(c.etcdLog, lines))
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "--- %s\n%s\n", n.PatroniLog(), localnode.TailFile(n.PatroniLog(), lines))
		fmt.Fprintf(&b, "--- %s\n%s\n", n.PG.LogFile(), c.engine.LogTail(n.PG, lines))
	}
	return b.String()
}

// getJSON GETs url (at most 2 s) and decodes a 200 response into v.
func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
