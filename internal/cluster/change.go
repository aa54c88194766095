package cluster

import (
	"maps"
	"reflect"
)

// ChangeChecks are the rules on changing an existing cluster from old (the configuration last applied)
// to s: errors refuse the plan, warnings say what it will do. Each carries its attribute path.
func ChangeChecks(old, s Spec) (errs, warnings []*FieldError) {
	if s.Restore != nil && !reflect.DeepEqual(old.Restore, s.Restore) {
		errs = append(errs, Errorf([]string{"restore"}, "Restore Applies At Create Only",
			"The restore block says what a new cluster is created from, and this cluster exists: adding or changing the block would do nothing, "+
				"so it is refused rather than ignored. Remove the block (or put it back as it was). To restore again, create another cluster "+
				"with the block (a new name or local.data_dir), or replace this one with `terraform apply -replace` (its data is destroyed first)."))
	}
	if from, to := old.PostgresMajor, s.PostgresMajor; from > 0 && to > 0 && from != to {
		warnings = append(warnings, Errorf([]string{"postgres_major"}, "Changing PostgreSQL's Major Version Destroys This Cluster",
			"postgres_major %d -> %d: pgnvme has no in-place major upgrade, so this plan replaces the cluster: Terraform destroys "+
				"every node with its data, then creates a new, empty cluster of PostgreSQL %d. With an archive, the data survives only there, "+
				"and only a cluster of PostgreSQL %d can restore it. If you need the data, do not apply: put postgres_major = %d back and "+
				"follow the major upgrades guide (a new cluster of the new major beside this one, loaded with pg_dump or logical replication).",
			from, to, to, from, from))
	}
	return errs, warnings
}

// Reconfigures reports whether an apply of plan, from old to s, changes Patroni's dynamic configuration or
// restarts PostgreSQL: what the nodes then report as applied is known only after it.
func Reconfigures(old, s Spec, plan Plan) bool {
	return plan.Actions != "" || !maps.Equal(old.Parameters, s.Parameters) || old.Synchronous != s.Synchronous
}

// SynchronousKept reports whether an apply of plan, from old (the configuration last applied, with the
// members prior the state records) to s, leaves synchronous_standby_names and whether it is degraded as
// the state has them: nothing that decides them changes (the synchronous block, and the members as planned:
// names, zones, roles, addresses and states, with no promotion). Otherwise they are known after the apply.
func SynchronousKept(old, s Spec, prior []Member, plan Plan) bool {
	if len(prior) == 0 || plan.Promoting || old.Synchronous != s.Synchronous || len(plan.Members) != len(prior) {
		return false
	}
	for i, m := range plan.Members {
		p := prior[i]
		if m.Name != p.Name || m.Zone != p.Zone || m.Role != p.Role || m.Host != p.Host || m.Port != p.Port || m.State != p.State {
			return false
		}
	}
	return true
}
