package cluster

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Restore is the restore block: the cluster is created from a base backup of another archive (another
// cluster's, or this cluster's copy in another region) and that archive's WAL, to a target, instead of
// initdb. It acts at create only.
type Restore struct {
	// Archive is the archive restored from, given like the cluster's own: its archiver's settings, and
	// Stanza, the pgBackRest stanza (the source cluster's name; "" means this cluster's name).
	Archive bootstrap.Archive
	// Backup is the base backup's label or name; "" and archive.LatestBackup let the restore choose the
	// newest backup before the target (archive.RestoreBackup).
	Backup string
	// TargetTime (RFC 3339), TargetLSN, TargetName and TargetImmediate are the target as given: at most one
	// is set, none means the end of the archive. Target reads them.
	TargetTime, TargetLSN, TargetName string
	TargetImmediate                   bool
}

// RestoreInput is the restore block as given; nil and "" are unset.
type RestoreInput struct {
	PgBackRestOptions map[string]string
	WALGEnv           map[string]string
	Stanza            string
	Backup            string
	Target            RestoreTargetInput
}

// RestoreTargetInput is restore.target as given.
type RestoreTargetInput struct {
	Time, LSN, Name string
	Immediate       bool
}

// RestoreOf is in's Restore (nil for nil): the restore block's, and a restore drill's, which is given
// the same way.
func RestoreOf(in *RestoreInput) *Restore {
	if in == nil {
		return nil
	}
	return &Restore{
		Archive: bootstrap.Archive{PgBackRestOptions: maps.Clone(in.PgBackRestOptions), WALGEnv: maps.Clone(in.WALGEnv), Stanza: in.Stanza},
		Backup:  in.Backup, TargetTime: in.Target.Time, TargetLSN: in.Target.LSN, TargetName: in.Target.Name, TargetImmediate: in.Target.Immediate,
	}
}

// Target is where the restore's recovery stops (archive.Target); an error for a target Validate refuses.
func (r Restore) Target() (archive.Target, error) {
	var t archive.Target
	if r.TargetTime != "" {
		v, err := time.Parse(time.RFC3339, r.TargetTime)
		if err != nil {
			return t, fmt.Errorf("target.time %q is not an RFC 3339 time such as 2026-12-02T10:30:00Z", r.TargetTime)
		}
		t.Time = v
	}
	t.LSN, t.Name, t.Immediate = r.TargetLSN, r.TargetName, r.TargetImmediate
	return t, nil
}

// RestoreLocation is where s is restored from (archive.LocationOf the restore block's archive, its stanza
// defaulting to s's name); ok is false without a restore block or for a location pgnvme cannot read.
func (s Spec) RestoreLocation() (archive.Location, bool) {
	if s.Restore == nil {
		return archive.Location{}, false
	}
	stanza := s.Restore.Archive.Stanza
	if stanza == "" {
		stanza = s.Name
	}
	return archive.LocationOf(s.Restore.Archive.PgBackRestOptions, s.Restore.Archive.WALGEnv, stanza)
}

// restorePointName is what a restore point's name may hold here: PostgreSQL allows up to 63 bytes; the
// quotes and backslashes pgBackRest and Patroni would have to escape are left out.
var restorePointName = regexp.MustCompile(`^[A-Za-z0-9 _.:+@/-]{1,63}$`)

// backupName is a pgBackRest backup label (20261202-052928F, 20261202-052928F_20261202-060000I) or a
// WAL-G backup name (base_000000010000000000000002).
var backupName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// validateRestore reports the restore block's problems (RestoreProblems), and an archive that is the
// cluster's own (a restore must archive elsewhere than it reads, or its new history would be written over
// the one it restores).
func validateRestore(s Spec) []*FieldError {
	r := s.Restore
	if r == nil {
		return nil
	}
	out := RestoreProblems([]string{"restore"}, *r)
	add := func(path []string, summary, format string, args ...any) {
		out = append(out, Errorf(path, summary, format, args...))
	}
	if from, ok := s.RestoreLocation(); ok {
		if own, ok := s.ArchiveLocation(); ok && sameLocation(from, own) {
			add([]string{"restore", "archive"}, "Restore From The Cluster's Own Archive",
				"The cluster would be restored from %s and archive to it as well: its new history would be written beside the one it restores "+
					"from, and the restored cluster's backups and retention would act on the source's. Archive elsewhere (another prefix, "+
					"bucket or stanza), or restore from another archive. A cluster whose every node is lost needs no restore block: the next "+
					"apply restores it from its own archive.", from)
		}
	}
	return out
}

// RestoreProblems reports the problems of r, given by the block at root: its archive's settings, the target
// (one kind, well formed) and the backup's name.
func RestoreProblems(root []string, r Restore) []*FieldError {
	var out []*FieldError
	at := func(names ...string) []string { return append(slices.Clip(root), names...) }
	add := func(path []string, summary, format string, args ...any) {
		out = append(out, Errorf(path, summary, format, args...))
	}
	for _, p := range r.Archive.ProblemsAt(at("archive")) {
		add(p.Path, "Invalid Restore Archive", "%s", p.Err.Error())
	}
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"time", r.TargetTime != ""}, {"lsn", r.TargetLSN != ""}, {"name", r.TargetName != ""}, {"immediate", r.TargetImmediate}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) > 1 {
		add(at("target"), "Conflicting Restore Targets", "The target sets %s: give one of time, lsn, name and immediate "+
			"(or none, to restore to the end of the archive).", strings.Join(kinds, " and "))
	}
	if _, err := r.Target(); err != nil {
		add(at("target", "time"), "Invalid Restore Target", "%s.", capitalize(err.Error()))
	}
	if r.TargetLSN != "" {
		if _, err := topology.ParseLSN(r.TargetLSN); err != nil {
			add(at("target", "lsn"), "Invalid Restore Target", "target.lsn: %s.", err.Error())
		}
	}
	if r.TargetName != "" && !restorePointName.MatchString(r.TargetName) {
		add(at("target", "name"), "Invalid Restore Target", "target.name %q is not a restore point name pgnvme passes on: "+
			"use 1 to 63 letters, digits, spaces and _ . : + @ / - (the name given to pg_create_restore_point).", r.TargetName)
	}
	if r.Backup != "" && !backupName.MatchString(r.Backup) {
		add(at("backup"), "Invalid Restore Backup", "backup %q is neither %q nor a backup's name "+
			"(a pgBackRest label such as 20261202-052928F, or a WAL-G name such as base_000000010000000000000002).", r.Backup, archive.LatestBackup)
	}
	return out
}

// sameLocation reports whether a and b are the same history: one archiver, bucket (or posix root) and
// key prefix.
func sameLocation(a, b archive.Location) bool {
	if a.Tool != b.Tool || a.Bucket != b.Bucket || len(a.Keys) == 0 || len(b.Keys) == 0 {
		return false
	}
	if a.Bucket == "" && strings.TrimSuffix(a.Root, "/") != strings.TrimSuffix(b.Root, "/") {
		return false
	}
	return a.Keys[0] == b.Keys[0]
}
