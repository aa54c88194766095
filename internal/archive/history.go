package archive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Archivers, as a Location names them.
const (
	ToolPgBackRest = "pgBackRest"
	ToolWALG       = "WAL-G"
)

// Location is where a cluster's archive lives, as read from its archiver's settings (LocationOf): an S3
// bucket and key prefix, or a directory on the machine (pgBackRest's posix repository, Bucket "").
type Location struct {
	Tool string // ToolPgBackRest or ToolWALG
	// Bucket and Region are the S3 bucket's (Bucket "" for a posix repository).
	Bucket, Region string
	// Keys are the key prefixes (each ending in "/") under which the cluster's history lies: pgBackRest's
	// archive/<stanza>/ and backup/<stanza>/ under repo1-path; WAL-G's wal_005/ and basebackups_005/ under
	// WALG_S3_PREFIX's path. In a posix repository they are directories under Root.
	Keys []string
	// Root is what the keys start with: the S3 key prefix ("" or ending in "/"), or a posix repository's
	// directory (repo1-path).
	Root string
	// Stanza is pgBackRest's stanza ("" for WAL-G).
	Stanza string
}

func (l Location) String() string {
	switch {
	case l.Tool == ToolPgBackRest && l.Bucket != "":
		return fmt.Sprintf("pgBackRest stanza %s in s3://%s/%s", l.Stanza, l.Bucket, strings.TrimSuffix(l.Root, "/"))
	case l.Tool == ToolPgBackRest:
		return fmt.Sprintf("pgBackRest stanza %s in %s", l.Stanza, l.Root)
	default:
		return fmt.Sprintf("WAL-G prefix s3://%s/%s", l.Bucket, strings.TrimSuffix(l.Root, "/"))
	}
}

// LocationOf is the archive location of a cluster's archiver settings: pgBackRest's options (repo1-type s3
// or posix; repo1-path, default /var/lib/pgbackrest; the stanza) or WAL-G's environment (WALG_S3_PREFIX,
// AWS_REGION). ok is false when the settings name no location pgnvme can read (another repository type,
// or no S3 prefix).
func LocationOf(pgbackrest, walg map[string]string, stanza string) (Location, bool) {
	if len(pgbackrest) > 0 {
		path := pgbackrest["repo1-path"]
		if path == "" {
			path = "/var/lib/pgbackrest"
		}
		l := Location{Tool: ToolPgBackRest, Stanza: stanza}
		switch pgbackrest["repo1-type"] {
		case "s3":
			root := strings.Trim(path, "/")
			if root != "" {
				root += "/"
			}
			l.Bucket, l.Region, l.Root = pgbackrest["repo1-s3-bucket"], pgbackrest["repo1-s3-region"], root
			l.Keys = []string{root + "archive/" + stanza + "/", root + "backup/" + stanza + "/"}
			return l, l.Bucket != ""
		case "", "posix":
			l.Root = path
			l.Keys = []string{"archive/" + stanza + "/", "backup/" + stanza + "/"}
			return l, true
		}
		return Location{}, false
	}
	prefix, ok := strings.CutPrefix(walg["WALG_S3_PREFIX"], "s3://")
	if !ok {
		return Location{}, false
	}
	bucket, key, _ := strings.Cut(strings.TrimSuffix(prefix, "/"), "/")
	if key != "" {
		key += "/"
	}
	return Location{Tool: ToolWALG, Bucket: bucket, Region: walg["AWS_REGION"], Root: key,
		Keys: []string{key + "wal_005/", key + "basebackups_005/"}}, bucket != ""
}

// History is what a location holds of clusters' past, as an adapter read it.
type History struct {
	Location Location
	// Found names up to a few of the objects (or files) that hold history, as the evidence shown to the user.
	Found []string
	// SystemIDs are the PostgreSQL system identifiers whose history the location records (pgBackRest's
	// archive.info and backup.info, WAL-G's backup sentinels), sorted, each once. History whose identity
	// could not be read (WAL-G segments before a first backup, encrypted info files) has none.
	SystemIDs []string
}

// Empty reports whether the location holds no history at all.
func (h History) Empty() bool { return len(h.Found) == 0 && len(h.SystemIDs) == 0 }

// AddSystemIDs records ids, keeping SystemIDs sorted and each once.
func (h *History) AddSystemIDs(ids ...string) {
	for _, id := range ids {
		if id != "" && !slices.Contains(h.SystemIDs, id) {
			h.SystemIDs = append(h.SystemIDs, id)
		}
	}
	slices.Sort(h.SystemIDs)
}

// ForeignHistoryError refuses to start a cluster's archiving where another cluster's history lies.
type ForeignHistoryError struct {
	History History
	// Own is the starting cluster's system identifier ("" for a cluster not created yet).
	Own string
}

func (e *ForeignHistoryError) Error() string {
	h := e.History
	var b strings.Builder
	fmt.Fprintf(&b, "The archive location (%s) already holds another PostgreSQL cluster's history", h.Location)
	if len(h.SystemIDs) > 0 {
		fmt.Fprintf(&b, " (system identifier %s)", strings.Join(h.SystemIDs, ", "))
	}
	if len(h.Found) > 0 {
		fmt.Fprintf(&b, "; found %s", strings.Join(h.Found, ", "))
	}
	if e.Own == "" {
		b.WriteString(". A new cluster never starts archiving over another's history: its WAL segments would take the names of the old ones " +
			"(WAL-G refuses to replace them, pgBackRest refuses the stanza) and archiving would fail from its first segment, while WAL piles up on the node's disk.")
	} else {
		fmt.Fprintf(&b, ", and this cluster is system %s. A cluster never archives into another's history.", e.Own)
	}
	b.WriteString(" Nothing was changed. Give this cluster an archive location of its own (another bucket prefix, pgBackRest repo1-path or stanza); " +
		"or, to start from that history, create the cluster with a restore block that reads it (the cluster then archives to a location of its own), " +
		"or remove it from the archive if it is no longer needed.")
	return b.String()
}

// CheckHistory decides whether a cluster may start archiving into h's location: always when it holds no
// history; when own (the cluster's system identifier, "" for a cluster not created yet) is known, when
// every identity it records is own; never when it holds history of unknown or other identity.
func CheckHistory(h History, own string) error {
	if h.Empty() {
		return nil
	}
	if own != "" && len(h.SystemIDs) > 0 && !slices.ContainsFunc(h.SystemIDs, func(id string) bool { return id != own }) {
		return nil
	}
	return &ForeignHistoryError{History: h, Own: own}
}

// PgBackRestInfoSystemIDs are the system identifiers a pgBackRest archive.info or backup.info records: its
// [db] section's db-system-id and every entry of [db:history] (archive.info names the identifier db-id
// there, backup.info db-system-id). An encrypted or unreadable file is an error.
func PgBackRestInfoSystemIDs(data []byte) ([]string, error) {
	var ids []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	sawBackrest := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			sawBackrest = sawBackrest || section == "backrest"
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch {
		case section == "db" && key == "db-system-id":
			ids = append(ids, strings.Trim(value, `"`))
		case section == "db:history":
			var entry struct {
				SystemID *json.Number `json:"db-system-id"`
				ID       *json.Number `json:"db-id"`
			}
			d := json.NewDecoder(strings.NewReader(value))
			d.UseNumber()
			if err := d.Decode(&entry); err != nil {
				return nil, fmt.Errorf("reading [db:history] %s: %w", key, err)
			}
			if entry.SystemID != nil {
				ids = append(ids, entry.SystemID.String())
			} else if entry.ID != nil {
				ids = append(ids, entry.ID.String())
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !sawBackrest {
		return nil, fmt.Errorf("not a pgBackRest info file (no [backrest] section; is the repository encrypted?)")
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			return nil, fmt.Errorf("system identifier %q is not a number", id)
		}
	}
	return ids, nil
}

// WALGSentinelSystemID is the system identifier a WAL-G backup sentinel (basebackups_005/<name>_backup_stop_sentinel.json)
// records, "" when it records none.
func WALGSentinelSystemID(data []byte) (string, error) {
	var s struct {
		SystemIdentifier *json.Number `json:"SystemIdentifier"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&s); err != nil {
		return "", fmt.Errorf("reading a WAL-G backup sentinel: %w", err)
	}
	if s.SystemIdentifier == nil {
		return "", nil
	}
	return s.SystemIdentifier.String(), nil
}

// ReadWALGSentinel fills b from a WAL-G backup sentinel (basebackups_005/<name>_backup_stop_sentinel.json):
// the database's size and the backup's, and its start and end positions (LSN and FinishLSN, which WAL-G
// writes as numbers). The sentinel records no time (WAL-G keeps start_time and finish_time in the backup's
// metadata.json): b's times stay the sentinel's upload time, which is when the backup finished.
func ReadWALGSentinel(data []byte, b *Backup) error {
	var s struct {
		UncompressedSize int64   `json:"UncompressedSize"`
		CompressedSize   int64   `json:"CompressedSize"`
		LSN              *uint64 `json:"LSN"`
		FinishLSN        *uint64 `json:"FinishLSN"`
		PgVersion        int     `json:"PgVersion"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("reading a WAL-G backup sentinel: %w", err)
	}
	if s.PgVersion >= 100000 { // server_version_num: 150004 is 15.4
		b.Major = s.PgVersion / 10000
	}
	b.Size, b.RepoSize = s.UncompressedSize, s.CompressedSize
	if s.LSN != nil {
		b.LSNStart = topology.FormatLSN(*s.LSN)
	}
	if s.FinishLSN != nil {
		b.LSNStop = topology.FormatLSN(*s.FinishLSN)
	}
	return nil
}

// PgBackRestInfo is one stanza as `pgbackrest info --output=json` reports it.
type PgBackRestInfo struct {
	// Status is the stanza's status code and message (0 ok, 1 missing stanza path, 2 no valid backups,
	// 3 missing stanza data, ...).
	StatusCode    int
	StatusMessage string
	// SystemIDs are the identities of every database the stanza records (its history after upgrades).
	SystemIDs []string
	// Archives are the WAL ranges held, one per database version and identity ("15-1"), oldest first.
	Archives []PgBackRestArchive
	// Backups are the backups held, oldest first.
	Backups []Backup
}

// PgBackRestArchive is one WAL range of a stanza: segments Min to Max of archive id ID.
type PgBackRestArchive struct {
	ID, Min, Max string
}

// Backup is one base backup in an archive.
type Backup struct {
	Label string
	// Type is full, diff or incr (pgBackRest), full or delta (WAL-G).
	Type string
	// Start and Stop are Unix seconds.
	Start, Stop int64
	// Size is the database's size, RepoSize what the backup stored (compressed, only what changed).
	Size, RepoSize int64
	// WALStart and WALStop are the first and last segments the backup needs.
	WALStart, WALStop string
	// LSNStart and LSNStop are the WAL positions where the backup began and where it is consistent ("" when
	// the archive does not record them).
	LSNStart, LSNStop string
	// Major is the PostgreSQL major version the backup was taken from (0 when the archive does not say): a
	// physical backup restores into that major only.
	Major int
}

// History is what the stanza holds of clusters' past, as History: its identities and, as evidence, its
// WAL range and latest backup.
func (i PgBackRestInfo) History(l Location) History {
	h := History{Location: l}
	h.AddSystemIDs(i.SystemIDs...)
	for _, a := range i.Archives {
		if a.Max != "" {
			h.Found = append(h.Found, fmt.Sprintf("WAL %s to %s (%s)", a.Min, a.Max, a.ID))
		}
	}
	if n := len(i.Backups); n > 0 {
		h.Found = append(h.Found, fmt.Sprintf("%d backups, the latest %s", n, i.Backups[n-1].Label))
	}
	if len(h.Found) == 0 && len(h.SystemIDs) > 0 {
		h.Found = append(h.Found, "the stanza's info files")
	}
	return h
}

// ParsePgBackRestInfo reads the first stanza of `pgbackrest info --output=json` (pgBackRest 2.45's format).
func ParsePgBackRestInfo(data []byte) (PgBackRestInfo, error) {
	var raw []struct {
		Status struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
		DB []struct {
			ID       int         `json:"id"`
			SystemID json.Number `json:"system-id"`
			Version  string      `json:"version"`
		} `json:"db"`
		Archive []struct {
			ID  string `json:"id"`
			Min string `json:"min"`
			Max string `json:"max"`
		} `json:"archive"`
		Backup []struct {
			Label    string `json:"label"`
			Type     string `json:"type"`
			Database struct {
				ID int `json:"id"`
			} `json:"database"`
			Archive struct {
				Start string `json:"start"`
				Stop  string `json:"stop"`
			} `json:"archive"`
			LSN struct {
				Start string `json:"start"`
				Stop  string `json:"stop"`
			} `json:"lsn"`
			Info struct {
				Size       int64 `json:"size"`
				Repository struct {
					Delta int64 `json:"delta"`
				} `json:"repository"`
			} `json:"info"`
			Timestamp struct {
				Start int64 `json:"start"`
				Stop  int64 `json:"stop"`
			} `json:"timestamp"`
		} `json:"backup"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return PgBackRestInfo{}, fmt.Errorf("reading pgbackrest info: %w", err)
	}
	if len(raw) == 0 {
		return PgBackRestInfo{}, fmt.Errorf("reading pgbackrest info: no stanza in its output")
	}
	r := raw[0]
	out := PgBackRestInfo{StatusCode: r.Status.Code, StatusMessage: r.Status.Message}
	majors := map[int]int{}
	for _, db := range r.DB {
		out.SystemIDs = append(out.SystemIDs, db.SystemID.String())
		if v, err := strconv.Atoi(db.Version); err == nil && v >= 10 { // "15"; 9.6 and older are "9.6"
			majors[db.ID] = v
		}
	}
	for _, a := range r.Archive {
		out.Archives = append(out.Archives, PgBackRestArchive{ID: a.ID, Min: a.Min, Max: a.Max})
	}
	for _, b := range r.Backup {
		out.Backups = append(out.Backups, Backup{Label: b.Label, Type: b.Type, Start: b.Timestamp.Start, Stop: b.Timestamp.Stop,
			Size: b.Info.Size, RepoSize: b.Info.Repository.Delta, WALStart: b.Archive.Start, WALStop: b.Archive.Stop, LSNStart: b.LSN.Start, LSNStop: b.LSN.Stop,
			Major: majors[b.Database.ID]})
	}
	return out, nil
}
