package archive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PgBackRestBackups are the backups a pgBackRest backup.info lists in [backup:current], oldest first
// (labels sort by time).
func PgBackRestBackups(data []byte) ([]Backup, error) {
	var out []Backup
	var dbIDs []int
	majors := map[int]int{} // [db:history]: each database id's major ("db-version")
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		label, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch section {
		case "db:history":
			var db struct {
				Version string `json:"db-version"`
			}
			id, err := strconv.Atoi(label)
			if err != nil || json.Unmarshal([]byte(value), &db) != nil {
				continue
			}
			if v, err := strconv.Atoi(db.Version); err == nil && v >= 10 { // "15"; 9.6 and older are "9.6"
				majors[id] = v
			}
			continue
		case "backup:current":
		default:
			continue
		}
		var b struct {
			Type      string `json:"backup-type"`
			Start     int64  `json:"backup-timestamp-start"`
			Stop      int64  `json:"backup-timestamp-stop"`
			Size      int64  `json:"backup-info-size"`
			RepoSize  int64  `json:"backup-info-repo-size-delta"`
			WALStart  string `json:"backup-archive-start"`
			WALStop   string `json:"backup-archive-stop"`
			LSNStart  string `json:"backup-lsn-start"`
			LSNStop   string `json:"backup-lsn-stop"`
			BackupErr bool   `json:"backup-error"`
			DBID      int    `json:"db-id"`
		}
		if err := json.Unmarshal([]byte(value), &b); err != nil {
			return nil, fmt.Errorf("reading backup %s of backup.info: %w", label, err)
		}
		out = append(out, Backup{Label: label, Type: b.Type, Start: b.Start, Stop: b.Stop, Size: b.Size, RepoSize: b.RepoSize, WALStart: b.WALStart, WALStop: b.WALStop,
			LSNStart: b.LSNStart, LSNStop: b.LSNStop})
		dbIDs = append(dbIDs, b.DBID)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Major = majors[dbIDs[i]]
	}
	slices.SortFunc(out, func(a, b Backup) int { return strings.Compare(a.Label, b.Label) })
	return out, nil
}

// ParsePgBackRestListing reads `pgbackrest repo-ls --recurse --output=json <dir>` (pgBackRest 2.45: every
// entry by its path under dir, with type, size and, for files, the time it was written in Unix seconds) as
// the files under dir, keyed dir/<path>.
func ParsePgBackRestListing(dir string, data []byte) ([]Object, error) {
	var entries map[string]struct {
		Type string `json:"type"`
		Time int64  `json:"time"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("reading pgbackrest repo-ls: %w", err)
	}
	var out []Object
	for name, e := range entries {
		if e.Type == "file" {
			out = append(out, Object{Key: strings.TrimSuffix(dir, "/") + "/" + name, Modified: time.Unix(e.Time, 0).UTC()})
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
