package bootstrap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// formatSpec renders synchronous_standby_names with quorum.Format.
func formatSpec(method quorum.Method, number int, names []string) (string, error) {
	s, err := quorum.Format(quorum.Spec{Method: method, Number: number, Names: names})
	if err != nil {
		// Validate admits only names and numbers Format accepts.
		return "", fmt.Errorf("provider bug: rendering synchronous_standby_names: %w", err)
	}
	return s, nil
}

// EffectiveSynchronousStandbyNames returns the synchronous_standby_names
// value to apply on primary now, given the standbys that are healthy
// (streaming; in any order, matched to c.Nodes ignoring ASCII letter case as
// PostgreSQL matches application_name).
//
// With data durability "required" it is what Render gives the primary,
// whatever the health: commits wait while too few standbys are up. With
// "preferred" the number of synchronous standbys is lowered to the number of
// healthy standbys, and to "" (asynchronous replication) when none is, so
// writes never stop (CloudNativePG's meaning). Unlike CloudNativePG, the list
// keeps every standby's name, healthy or not: a standby that comes back
// counts at once, before the next reconciliation raises the number again.
func EffectiveSynchronousStandbyNames(c Cluster, primary string, healthyStandbys []string) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	byKey := map[string]string{}
	for _, n := range c.Nodes {
		byKey[foldASCII(n)] = n
	}
	if primary == "" {
		bad("No primary was named; name the node that is the primary now.")
	} else if _, ok := byKey[foldASCII(primary)]; !ok {
		bad("The primary %q is not one of the cluster's nodes (%s); name the node that is the primary now.", primary, strings.Join(c.Nodes, ", "))
	} else {
		primary = byKey[foldASCII(primary)]
	}
	healthy := map[string]bool{}
	for _, h := range healthyStandbys {
		name, ok := byKey[foldASCII(h)]
		switch {
		case !ok:
			bad("The healthy standby %q is not one of the cluster's nodes (%s); list only the cluster's standbys.", h, strings.Join(c.Nodes, ", "))
		case name == primary:
			bad("The primary %q is listed as a healthy standby; list only standbys.", h)
		case healthy[name]:
			bad("The healthy standby %q is listed twice; list each standby once.", h)
		default:
			healthy[name] = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	number := c.Synchronous.Number
	if c.Synchronous.DataDurability == DurabilityPreferred {
		number = min(number, len(healthy))
	}
	return synchronousStandbyNames(c, primary, number)
}

// Warnings returns advice about a valid cluster that probably does not do
// what its author wants, one full sentence per finding, or nil. Call it after
// Validate.
func (c Cluster) Warnings() []string {
	var out []string
	s := c.Synchronous
	standbys := max(len(c.Nodes)-1, 0)
	if s.Number > 0 && standbys > 0 && (s.Commit == CommitLocal || s.Commit == CommitOff) {
		out = append(out, fmt.Sprintf("synchronous_commit %q makes commits wait for no standby, so the %d synchronous standbys protect nothing; use %q.", s.Commit, s.Number, CommitOn))
	}
	switch {
	case s.Number > 0 && standbys == 0:
		out = append(out, fmt.Sprintf("The cluster has no standby, so commits wait for none of the %d synchronous standbys until there are more nodes; add nodes for durability beyond one machine.", s.Number))
	case s.Number > standbys && s.DataDurability == DurabilityPreferred:
		out = append(out, fmt.Sprintf("The number of synchronous standbys (%d) is more than the cluster's %d standbys; commits wait for %d until there are more nodes.", s.Number, standbys, standbys))
	}
	if s.Number > 0 && s.Number == standbys && s.DataDurability == DurabilityRequired {
		out = append(out, fmt.Sprintf("With data durability %q, %d synchronous standbys of %d means every standby confirms each commit: one standby down stops every commit; add a node, lower the number, or use %q.", DurabilityRequired, s.Number, standbys, DurabilityPreferred))
	}
	if s.Method == quorum.MethodFirst && s.Number > 0 && standbys > s.Number {
		out = append(out, "FIRST waits for the standbys first in node order, not the fastest: a slow standby early in the list slows every commit; ANY waits for whichever standbys answer first.")
	}
	return out
}
