// Command walgstandin stands in for WAL-G in tests, on machines where WAL-G cannot be installed (its
// module is not served and no distribution packages it). It answers the PostgreSQL commands pgnvme's drill
// and its tests run, with WAL-G's arguments, environment (WALG_S3_PREFIX, AWS_ENDPOINT, AWS_REGION,
// AWS_S3_FORCE_PATH_STYLE, the AWS credentials), exit statuses and object layout in S3 (wal_005/<segment>,
// basebackups_005/<name>_backup_stop_sentinel.json with LSN, FinishLSN and sizes, the backup's files under
// basebackups_005/<name>/tar_partitions/), so that what pgnvme reads and runs is exercised against real
// S3 (moto) and a real PostgreSQL:
//
//	wal-push PATH                 put the segment (refused when a different one is there: WALG_PREVENT_WAL_OVERWRITE)
//	wal-fetch NAME DEST           get the segment; exit 74 when the archive lacks it
//	backup-push PGDATA            pg_basebackup (base.tar only) of the server at PGHOST/PGPORT/PGUSER, named base_<start segment>
//	backup-fetch DIR NAME|LATEST  unpack the backup into DIR
//	wal-verify integrity timeline --json --timeline T --lsn L
//	                              every segment from the oldest backup's start to the one before L's, and the timelines
//
// What it is not: objects are stored uncompressed and without WAL-G's compression extension (pgnvme reads
// segment names with or without one), there is one tar partition per backup, no delta backups, no
// encryption, and wal-verify reports a missing segment as MISSING_LOST only (WAL-G calls the newest ones
// uploading or delayed; the drill asks about segments that are all older than the newest).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// notInArchive is wal-fetch's exit status for a segment the archive lacks (WAL-G pull request 1195).
const notInArchive = 74

type store struct {
	api    *s3.Client
	bucket string
	root   string // the key prefix, "" or ending in "/"
}

func main() {
	status, err := run(context.Background(), os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "walgstandin:", err)
	}
	os.Exit(status)
}

func run(ctx context.Context, args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("no command")
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	loc, ok := archive.LocationOf(nil, env, "")
	if !ok {
		return 1, errors.New("WALG_S3_PREFIX is not an s3:// prefix")
	}
	api, err := awsclient.S3ForWALG(ctx, env)
	if err != nil {
		return 1, err
	}
	st := store{api: api, bucket: loc.Bucket, root: loc.Root}
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "wal-push" && len(rest) == 1:
		return st.walPush(ctx, rest[0])
	case cmd == "wal-fetch" && len(rest) == 2:
		return st.walFetch(ctx, rest[0], rest[1])
	case cmd == "backup-push" && len(rest) == 1:
		return st.backupPush(ctx, rest[0])
	case cmd == "backup-fetch" && len(rest) == 2:
		return st.backupFetch(ctx, rest[0], rest[1])
	case cmd == "wal-verify":
		return st.walVerify(ctx, rest)
	}
	return 2, fmt.Errorf("unsupported command %q", strings.Join(args, " "))
}

func (st store) get(ctx context.Context, key string) ([]byte, error) {
	out, err := st.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &st.bucket, Key: aws.String(st.root + key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func (st store) put(ctx context.Context, key string, data []byte) error {
	_, err := st.api.PutObject(ctx, &s3.PutObjectInput{Bucket: &st.bucket, Key: aws.String(st.root + key), Body: bytes.NewReader(data)})
	return err
}

// list is the keys under prefix (relative to the root) with their modification times.
func (st store) list(ctx context.Context, prefix string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	p := s3.NewListObjectsV2Paginator(st.api, &s3.ListObjectsV2Input{Bucket: &st.bucket, Prefix: aws.String(st.root + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), st.root)] = aws.ToTime(o.LastModified)
		}
	}
	return out, nil
}

func (st store) walPush(ctx context.Context, file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 1, err
	}
	key := "wal_005/" + filepath.Base(file)
	old, err := st.get(ctx, key)
	var nsk *types.NoSuchKey
	switch {
	case err == nil && bytes.Equal(old, data):
		return 0, nil
	case err == nil:
		return 1, fmt.Errorf("%s is in the archive with other content", key)
	case !errors.As(err, &nsk):
		return 1, err
	}
	if err := st.put(ctx, key, data); err != nil {
		return 1, err
	}
	return 0, nil
}

func (st store) walFetch(ctx context.Context, name, dest string) (int, error) {
	data, err := st.get(ctx, "wal_005/"+name)
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return notInArchive, fmt.Errorf("%s is not in the archive", name)
	}
	if err != nil {
		return 1, err
	}
	if err := os.WriteFile(dest, data, 0o600); err != nil {
		return 1, err
	}
	return 0, nil
}

var (
	startPoint = regexp.MustCompile(`write-ahead log start point: ([0-9A-F]+/[0-9A-F]+) on timeline ([0-9]+)`)
	endPoint   = regexp.MustCompile(`write-ahead log end point: ([0-9A-F]+/[0-9A-F]+)`)
	systemID   = regexp.MustCompile(`Database system identifier:\s+([0-9]+)`)
)

// backupPush takes a base backup with pg_basebackup (from PGNVME_PG_BINDIR, else PATH) and uploads it
// with its sentinel. The WAL pg_basebackup streams beside it (pg_wal.tar, for its report of the backup's
// start and end positions) is dropped: as WAL-G's, the backup's WAL is in the archive only.
func (st store) backupPush(ctx context.Context, pgdata string) (int, error) {
	bin := func(name string) string {
		if dir := os.Getenv("PGNVME_PG_BINDIR"); dir != "" {
			return filepath.Join(dir, name)
		}
		return name
	}
	tmp, err := os.MkdirTemp("", "walgstandin-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	started := time.Now().UTC()
	out, err := exec.CommandContext(ctx, bin("pg_basebackup"), "-D", tmp, "-Ft", "-X", "stream", "-c", "fast", "--no-manifest", "-v").CombinedOutput()
	if err != nil {
		return 1, fmt.Errorf("pg_basebackup: %w\n%s", err, out)
	}
	start, end := startPoint.FindSubmatch(out), endPoint.FindSubmatch(out)
	if start == nil || end == nil {
		return 1, fmt.Errorf("pg_basebackup did not report its WAL positions:\n%s", out)
	}
	startLSN, err1 := topology.ParseLSN(string(start[1]))
	endLSN, err2 := topology.ParseLSN(string(end[1]))
	timeline, err3 := strconv.ParseUint(string(start[2]), 10, 32)
	if err := errors.Join(err1, err2, err3); err != nil {
		return 1, err
	}
	data, err := os.ReadFile(filepath.Join(tmp, "base.tar"))
	if err != nil {
		return 1, err
	}
	name := "base_" + archive.SegmentName(uint32(timeline), startLSN)
	if err := st.put(ctx, "basebackups_005/"+name+"/tar_partitions/part_1.tar", data); err != nil {
		return 1, err
	}
	sentinel := map[string]any{"LSN": startLSN, "FinishLSN": endLSN, "UncompressedSize": len(data), "CompressedSize": len(data),
		"StartTime": started, "FinishTime": time.Now().UTC(), "DataDir": pgdata, "IsPermanent": false}
	if cd, err := exec.CommandContext(ctx, bin("pg_controldata"), "-D", pgdata).Output(); err == nil {
		if m := systemID.FindSubmatch(cd); m != nil {
			id, _ := strconv.ParseUint(string(m[1]), 10, 64)
			sentinel["SystemIdentifier"] = id
		}
	}
	js, err := json.Marshal(sentinel)
	if err != nil {
		return 1, err
	}
	if err := st.put(ctx, "basebackups_005/"+name+"_backup_stop_sentinel.json", js); err != nil {
		return 1, err
	}
	fmt.Fprintf(os.Stderr, "walgstandin: backup %s uploaded (%d bytes)\n", name, len(data))
	return 0, nil
}

// backups are the backups' names by the time their sentinel was written.
func (st store) backups(ctx context.Context) ([]string, error) {
	keys, err := st.list(ctx, "basebackups_005/")
	if err != nil {
		return nil, err
	}
	var names []string
	for k := range keys {
		if name, ok := strings.CutSuffix(path.Base(k), "_backup_stop_sentinel.json"); ok && path.Dir(k) == "basebackups_005" {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return keys["basebackups_005/"+a+"_backup_stop_sentinel.json"].Compare(keys["basebackups_005/"+b+"_backup_stop_sentinel.json"])
	})
	return names, nil
}

func (st store) backupFetch(ctx context.Context, dir, name string) (int, error) {
	if name == "LATEST" {
		names, err := st.backups(ctx)
		if err != nil || len(names) == 0 {
			return 1, errors.Join(errors.New("no backup found"), err)
		}
		name = names[len(names)-1]
	}
	data, err := st.get(ctx, "basebackups_005/"+name+"/tar_partitions/part_1.tar")
	if err != nil {
		return 1, fmt.Errorf("backup %s: %w", name, err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		if err != nil {
			return 1, err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, os.FileMode(h.Mode)&0o700|0o700)
		case tar.TypeReg:
			var body []byte
			if body, err = io.ReadAll(tr); err == nil {
				if err = os.MkdirAll(filepath.Dir(target), 0o700); err == nil {
					err = os.WriteFile(target, body, os.FileMode(h.Mode)&0o777)
				}
			}
		default:
			err = fmt.Errorf("%s: unsupported tar entry type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			return 1, err
		}
	}
}

type segmentRange struct {
	Timeline uint32 `json:"timeline_id"`
	Start    string `json:"start_segment"`
	End      string `json:"end_segment"`
	Count    int    `json:"segments_count"`
	Status   string `json:"status"`
}

func (st store) walVerify(ctx context.Context, args []string) (int, error) {
	var timeline uint64
	var lsn string
	var checks []string
	jsonOut := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--json":
			jsonOut = true
		case a == "--timeline" && i+1 < len(args):
			i++
			timeline, _ = strconv.ParseUint(args[i], 10, 32)
		case a == "--lsn" && i+1 < len(args):
			i++
			lsn = args[i]
		case a == "integrity" || a == "timeline":
			checks = append(checks, a)
		default:
			return 2, fmt.Errorf("wal-verify: unsupported argument %q", a)
		}
	}
	pos, err := topology.ParseLSN(lsn)
	if !jsonOut || timeline == 0 || err != nil || len(checks) == 0 {
		return 2, errors.New("wal-verify: the stand-in needs checks, --json, --timeline and --lsn")
	}
	keys, err := st.list(ctx, "wal_005/")
	if err != nil {
		return 1, err
	}
	present, highest := map[string]bool{}, uint64(0)
	for k := range keys {
		if seg, ok := archive.SegmentOf(archive.ToolWALG, k); ok {
			present[seg[8:]] = true
			if tl, err := strconv.ParseUint(seg[:8], 16, 32); err == nil && tl > highest {
				highest = tl
			}
		}
	}
	// The oldest backup's start segment: where the integrity check stops.
	stop := ""
	names, err := st.backups(ctx)
	if err != nil {
		return 1, err
	}
	for _, n := range names {
		if seg := strings.TrimPrefix(n, "base_"); stop == "" || seg[8:] < stop {
			stop = seg[8:]
		}
	}
	current := archive.SegmentName(uint32(timeline), pos-1)
	var ranges []segmentRange
	status := "OK"
	for seg := previous(current[8:]); seg != "" && (stop == "" || seg >= stop); seg = previous(seg) {
		s := "FOUND"
		if !present[seg] {
			s, status = "MISSING_LOST", "FAILURE"
		}
		name := fmt.Sprintf("%08X", timeline) + seg
		if n := len(ranges); n > 0 && ranges[n-1].Status == s {
			ranges[n-1].Start, ranges[n-1].Count = name, ranges[n-1].Count+1
			continue
		}
		ranges = append(ranges, segmentRange{Timeline: uint32(timeline), Start: name, End: name, Count: 1, Status: s})
	}
	slices.Reverse(ranges)
	out := map[string]any{}
	if slices.Contains(checks, "integrity") {
		out["integrity"] = map[string]any{"status": status, "details": ranges}
	}
	if slices.Contains(checks, "timeline") {
		tlStatus := "OK"
		if highest != timeline {
			tlStatus = "FAILURE"
		}
		out["timeline"] = map[string]any{"status": tlStatus, "details": map[string]uint64{"current_timeline_id": timeline, "highest_storage_timeline_id": highest}}
	}
	return 0, json.NewEncoder(os.Stdout).Encode(out)
}

// previous is the segment (log and number, 16 hex digits) before seg, "" before the first.
func previous(seg string) string {
	log, _ := strconv.ParseUint(seg[:8], 16, 32)
	n, _ := strconv.ParseUint(seg[8:], 16, 32)
	switch {
	case n > 0:
		n--
	case log > 0:
		log, n = log-1, archive.SegmentsPerLog-1
	default:
		return ""
	}
	return fmt.Sprintf("%08X%08X", log, n)
}
