// Command nodesim boots a pgnvme cluster of simulated EC2 nodes on this machine (internal/nodesim): each
// node a network namespace with an address in 198.18.0.0/15, a loop device as its instance-store NVMe,
// and the cloud-init user-data pgnvme renders for EC2, run by cloud-init, with real etcd, Patroni 4,
// PostgreSQL and pgBackRest against moto over TLS. For people without an AWS account: `make nodesim`
// (as root).
//
// It prints how to reach the nodes, then reads commands from standard input (help lists them) until quit,
// end of input or a signal; then it removes everything it made.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

func main() {
	nodes := flag.Int("nodes", 3, "number of nodes (1 to 9)")
	name := flag.String("name", "sim", "cluster name")
	dir := flag.String("dir", "/tmp", "directory for the run's files (not under /etc, /usr, /var or /run)")
	userData := flag.String("user-data", "", "also write each node's rendered cloud-config to this directory")
	clean := flag.String("clean", "", "remove what the run with this ID left behind when its process died, and exit")
	stale := flag.Bool("stale", false, "list the runs under -dir whose process died, and exit")
	flag.Parse()
	switch {
	case *stale:
		ids, err := nodesim.StaleRuns(*dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nodesim:", err)
			os.Exit(1)
		}
		for _, id := range ids {
			fmt.Println(id)
		}
		return
	case *clean != "":
		if err := nodesim.Clean(context.Background(), *dir, *clean); err != nil {
			fmt.Fprintln(os.Stderr, "nodesim:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*nodes, *name, *dir, *userData); err != nil {
		fmt.Fprintln(os.Stderr, "nodesim:", err)
		os.Exit(1)
	}
}

func run(nodes int, name, dir, userDataDir string) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	s, err := nodesim.New(ctx, nodesim.Options{Dir: dir, Logf: logf})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("nodesim: removing everything")
		err = errors.Join(err, s.Close())
	}()
	c, err := s.NewCluster(ctx, nodesim.ClusterOptions{Name: name, Nodes: nodes})
	if err != nil {
		return err
	}
	if userDataDir != "" {
		if err := os.MkdirAll(userDataDir, 0o755); err != nil {
			return err
		}
		for _, n := range c.Nodes {
			p := filepath.Join(userDataDir, n.Name+".cloud-config")
			if err := os.WriteFile(p, []byte(c.UserData[n.Name].CloudConfig), 0o644); err != nil {
				return err
			}
		}
	}
	began := time.Now()
	if err := c.Boot(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, c.Logs(20))
	}
	st, err := waitFormed(ctx, c, len(c.Nodes))
	if err != nil {
		return fmt.Errorf("%w\n%s", err, c.Logs(20))
	}
	fmt.Printf("\ncluster %s formed in %.1f s: %s\n\n", name, time.Since(began).Seconds(), st)
	printHelp(s, c)

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		fmt.Print("nodesim> ")
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case line, ok := <-lines:
			if !ok {
				// No input (make nodesim in the background): run until a signal.
				<-ctx.Done()
				return nil
			}
			if quit := command(ctx, s, c, strings.Fields(line)); quit {
				return nil
			}
		}
	}
}

// waitFormed waits until n members show: a running leader, the others streaming quorum standbys (or
// replicas for a single node).
func waitFormed(ctx context.Context, c *nodesim.Cluster, n int) (nodesim.Status, error) {
	var st nodesim.Status
	err := wait.Until(ctx, "the cluster to form", 5*time.Minute, 500*time.Millisecond, wait.Real, func(ctx context.Context) (bool, error) {
		s, err := c.Status(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		st = s
		if len(s.Members) != n {
			return false, wait.NotYet(fmt.Errorf("%d members: %s", len(s.Members), s))
		}
		for _, m := range s.Members {
			if m.Role == patroniapi.RoleLeader && m.State == patroniapi.StateRunning || m.Role != patroniapi.RoleLeader && m.State == patroniapi.StateStreaming {
				continue
			}
			return false, wait.NotYet(fmt.Errorf("%s", s))
		}
		return true, nil
	})
	return st, err
}

func printHelp(s *nodesim.Sim, c *nodesim.Cluster) {
	ns := s.ServiceNamespace()
	fmt.Printf("The nodes (logs under each node's directory, log/):\n")
	for _, n := range c.Nodes {
		fmt.Printf("  %-6s %-15s %s\n", n.Name, n.IP, n.Dir)
	}
	fmt.Printf("\nReach them from the service namespace %s (the root namespace has no route to them):\n", ns)
	fmt.Printf("  ip netns exec %s env PGPASSWORD=%s psql -h %s -U postgres postgres\n", ns, c.Passwords.Superuser, c.Nodes[0].IP)
	fmt.Printf("  ip netns exec %s curl -s http://%s:8008/cluster\n", ns, c.Nodes[0].IP)
	fmt.Printf("  ip netns exec %s etcdctl --endpoints=http://%s:2379 member list\n", ns, c.Nodes[0].IP)
	fmt.Printf("\nCommands: status | kill NODE (machine loss) | boot NODE | stopstart NODE (EC2 stop/start: empty disk)\n")
	fmt.Printf("          systemctl NODE ARGS... | exec NODE COMMAND... | logs NODE | help | quit\n\n")
}

// command runs one line; it reports whether to quit.
func command(ctx context.Context, s *nodesim.Sim, c *nodesim.Cluster, words []string) bool {
	if len(words) == 0 {
		return false
	}
	node := func() *nodesim.Node {
		if len(words) < 2 || c.Node(words[1]) == nil {
			fmt.Println("which node?")
			return nil
		}
		return c.Node(words[1])
	}
	report := func(err error) {
		if err != nil {
			fmt.Println("error:", err)
		}
	}
	switch words[0] {
	case "quit", "exit":
		return true
	case "help":
		printHelp(s, c)
	case "status":
		st, err := c.Status(ctx)
		report(err)
		for _, m := range st.Members {
			fmt.Printf("  %-6s %-15s %-14s %-10s timeline %d\n", m.Name, m.Host, m.Role, m.State, m.Timeline)
		}
	case "kill":
		if n := node(); n != nil {
			report(n.Kill(ctx))
		}
	case "boot":
		if n := node(); n != nil {
			report(n.Boot(ctx))
		}
	case "stopstart":
		if n := node(); n != nil {
			report(n.StopStart(ctx))
		}
	case "systemctl":
		if n := node(); n != nil {
			code, out, err := n.Systemctl(words[2:]...)
			report(err)
			fmt.Printf("%s(exit %d)\n", out, code)
		}
	case "exec":
		if n := node(); n != nil && len(words) > 2 {
			out, err := n.Exec(ctx, "", words[2:]...)
			fmt.Print(out)
			report(err)
		}
	case "logs":
		if n := node(); n != nil {
			fmt.Print(n.Logs(15))
		}
	default:
		fmt.Println("unknown command; help lists them")
	}
	return false
}
