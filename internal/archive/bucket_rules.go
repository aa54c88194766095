package archive

import "strings"

// BucketRules are the settings of an archive's bucket that bear on deletion: Object Lock's default
// retention (nil without Object Lock), which keeps every object version that long whatever deletes it,
// and the lifecycle rules, which may delete objects by themselves.
type BucketRules struct {
	Lock      *ObjectLock
	Lifecycle []LifecycleRule
}

// ExpiresCurrentObjects reports whether r is enabled and deletes current objects (after a number of days
// or on a date), which on an archive deletes WAL and backups a restore needs.
func (r LifecycleRule) ExpiresCurrentObjects() bool {
	return r.Enabled && (r.ExpirationDays > 0 || r.ExpiresOnDate)
}

// Expiring are b's rules that expire current objects under l's keys (l in S3, whose keys are whole key
// prefixes): a rule whose prefix covers one of them, or lies inside one. A rule that filters on tags or
// sizes as well counts: it could match.
func (b BucketRules) Expiring(l Location) []LifecycleRule {
	var out []LifecycleRule
	for _, r := range b.Lifecycle {
		if !r.ExpiresCurrentObjects() {
			continue
		}
		for _, k := range l.Keys {
			if strings.HasPrefix(k, r.Prefix) || strings.HasPrefix(r.Prefix, k) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}
