package archive

import (
	"fmt"
	"slices"
	"strings"
)

// GuardsNotHeldError says that guards read back right after the provider applied them are not what it
// applied: S3 accepted every setting and then returned something else for these.
type GuardsNotHeldError struct {
	Bucket string
	// Drift holds only the guards that do not hold, each with what S3 returned instead (Drift's wording).
	Drift map[string]string
}

// CheckHeld returns a *GuardsNotHeldError for the guards of drift (Drift's result, read right after an
// apply) that are not DriftOK, or nil when every one holds.
func CheckHeld(bucket string, drift map[string]string) error {
	bad := map[string]string{}
	for k, v := range drift {
		if v != DriftOK {
			bad[k] = v
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &GuardsNotHeldError{Bucket: bucket, Drift: bad}
}

// Guards are the names of the guards that do not hold, sorted.
func (e *GuardsNotHeldError) Guards() []string {
	names := make([]string, 0, len(e.Drift))
	for k := range e.Drift {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Error names each guard with what S3 returned for it.
func (e *GuardsNotHeldError) Error() string {
	parts := make([]string, 0, len(e.Drift))
	for _, g := range e.Guards() {
		parts = append(parts, g+": "+e.Drift[g])
	}
	return fmt.Sprintf("bucket %s read back after apply: %s", e.Bucket, strings.Join(parts, "; "))
}

// Happened says what happened in a sentence, naming the guards.
func (e *GuardsNotHeldError) Happened() string {
	verb := " is"
	if len(e.Drift) > 1 {
		verb = " are"
	}
	return fmt.Sprintf("S3 accepted every setting of bucket %s, but read back right after the apply, %s%s not "+
		"what the provider set.", e.Bucket, strings.Join(e.Guards(), ", "), verb)
}

// Advice says what to do: first for the causes this package knows by name, then for the other guards.
func (e *GuardsNotHeldError) Advice() string {
	var out []string
	others := len(e.Drift)
	if r := e.Drift[GuardReplication]; strings.Contains(r, DriftDeleteMarkersNotReplicated) {
		out = append(out, "The S3 endpoint did not keep delete-marker replication: moto always reads it back as "+
			"Disabled, and other S3 emulators or proxies may drop it too. Against such an endpoint set "+
			"`replicate_delete_markers = false` in `replica` (the replica then keeps every object the archive "+
			"deletes); against AWS, look for something that rewrites this bucket's replication rule.")
		if r == DriftDeleteMarkersNotReplicated {
			others--
		}
	}
	if others > 0 {
		out = append(out, "Something changed the setting right after the provider wrote it, or the S3 endpoint "+
			"does not store it: look for another tool that manages this bucket (an aws_s3_bucket_* resource in "+
			"another configuration, an AWS Config remediation) or an endpoint that ignores the setting, stop or "+
			"replace it, and apply again.")
	}
	return strings.Join(out, " ")
}
