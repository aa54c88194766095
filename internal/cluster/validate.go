package cluster

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// FieldError is one problem with a configuration, with the attribute it is about. Path uses the
// resource's attribute names, such as ["synchronous", "number"]; empty means the resource as a whole.
type FieldError struct {
	Path []string
	// Summary is a short Title Case title; Detail says what is wrong and what to do.
	Summary string
	Detail  string
}

func (e *FieldError) Error() string {
	if len(e.Path) == 0 {
		return e.Detail
	}
	return strings.Join(e.Path, ".") + ": " + e.Detail
}

// Errorf is a FieldError at path.
func Errorf(path []string, summary, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...)}
}

// FieldErrors are the FieldErrors in err (joined or wrapped), in order, and whatever else err holds as
// plain errors.
func FieldErrors(err error) (fields []*FieldError, others []error) {
	if err == nil {
		return nil, nil
	}
	var fe *FieldError
	if multi, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // walking a join, not matching
		for _, e := range multi.Unwrap() {
			f, o := FieldErrors(e)
			fields, others = append(fields, f...), append(others, o...)
		}
		return fields, others
	}
	if errors.As(err, &fe) {
		return []*FieldError{fe}, nil
	}
	return nil, []error{err}
}

// nodeNamePattern: node names become application_name values, directory names, Patroni member names and
// DNS-like labels, so they stay plain.
var nodeNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// clusterNamePattern: the cluster name becomes directory, stanza, Patroni scope and tag values.
var clusterNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// CheckNodeName says what is wrong with a node name, nil when it is valid.
func CheckNodeName(name string) error {
	if !nodeNamePattern.MatchString(name) {
		return fmt.Errorf("the node name %q must start with a lower-case letter and contain only lower-case letters, digits, _ and - (at most 63 characters)", name)
	}
	return nil
}

// CheckName says what is wrong with a cluster name, nil when it is valid.
func CheckName(name string) error {
	if !clusterNamePattern.MatchString(name) {
		return fmt.Errorf("the cluster name %q must start with a lower-case letter and contain only lower-case letters, digits and - (at most 63 characters)", name)
	}
	return nil
}

// Validate reports every problem with s, each at its attribute; nil when the spec can be built. Rules
// that need the machine (ports free, binaries installed) are the platform's Preflight.
func Validate(s Spec) []*FieldError {
	var out []*FieldError
	add := func(path []string, summary, format string, args ...any) {
		out = append(out, Errorf(path, summary, format, args...))
	}
	if err := CheckName(s.Name); err != nil {
		add([]string{"name"}, "Invalid Cluster Name", "%s.", capitalize(err.Error()))
	}
	if s.Platform() == "" {
		add(nil, "Missing Platform", "Set exactly one platform block: local { data_dir = \"/var/lib/pgnvme/NAME\" } runs the nodes on this machine, "+
			"aws { instance_type = ..., subnet_ids = {...} } runs them on EC2 instances with instance-store NVMe.")
	}
	nodePath := []string{"node"}
	if len(s.Nodes) < bootstrap.MinNodes || len(s.Nodes) > bootstrap.MaxNodes {
		add(nodePath, "Invalid Node Count", "The cluster has %d nodes; give it %d to %d.", len(s.Nodes), bootstrap.MinNodes, bootstrap.MaxNodes)
	}
	for _, n := range s.Nodes {
		if err := CheckNodeName(n.Name); err != nil {
			add(nodePath, "Invalid Node Name", "%s.", capitalize(err.Error()))
		}
	}
	if s.Given != nil && s.Given.Backup != nil && s.Archive == nil {
		add([]string{"backup"}, "Backup Without Archive", "Base backups are written to the archive, and this cluster has none: "+
			"add an archive block (for example with pgnvme_archive_bucket's settings), or remove the backup block.")
	}
	out = append(out, validateRestore(s)...)
	out = append(out, validateTLS(s)...)
	if at := s.AcceptDataLossAtLSN; at != "" {
		if _, err := topology.ParseLSN(at); err != nil {
			add([]string{"accept_data_loss_at_lsn"}, "Invalid LSN", "accept_data_loss_at_lsn %q is not a WAL position: give the one the refused "+
				"plan names (such as 0/3000148): %v.", at, err)
		}
	}
	// The platform's block, in the context of the neutral spec.
	var block []*FieldError
	if s.Block != nil {
		block = s.Block.Validate(s)
	}
	blockAt := func(path []string) bool { // the block reports a problem at path or below it
		return slices.ContainsFunc(block, func(e *FieldError) bool { return len(e.Path) >= len(path) && slices.Equal(e.Path[:len(path)], path) })
	}
	// What a node's PostgreSQL accepts (duplicate names, synchronous settings, parameters, archive options)
	// is bootstrap's rule; it reports each problem with its attribute.
	for _, p := range s.Bootstrap().Problems() {
		switch {
		case len(p.Path) == 2 && p.Path[0] == "parameters" && s.PostgresMajor == 0 && s.Block != nil && s.Block.Platform() == PlatformLocal:
			continue // a parameter of another major: the local platform runs the installed one, and its plan checks them against it
		case len(p.Path) == 1 && p.Path[0] == "name",
			len(p.Path) == 1 && p.Path[0] == "node" && (len(s.Nodes) < bootstrap.MinNodes || len(s.Nodes) > bootstrap.MaxNodes),
			len(p.Path) == 1 && p.Path[0] == "archive" && blockAt(p.Path):
			continue // said above or by the platform's rule, in the product's own words
		}
		add(p.Path, summaryFor(p.Path), "%s", p.Err.Error())
	}
	return append(out, block...)
}

// summaryFor titles a bootstrap problem by the setting it is about.
func summaryFor(path []string) string {
	switch path[0] {
	case "node":
		return "Invalid Node List"
	case "synchronous":
		return "Invalid Synchronous Replication"
	case "parameters":
		return "Invalid Parameter"
	case "archive":
		return "Invalid Archive"
	case "backup":
		return "Invalid Backup Policy"
	case "postgres_major":
		return "Unsupported PostgreSQL Version"
	default:
		return "Invalid Cluster"
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
