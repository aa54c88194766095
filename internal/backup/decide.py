#!/usr/bin/python3
"""pgnvme-backup-decide: what the primary's scheduled backup does now, on every platform.

Written by terraform-provider-pgnvme (internal/backup); the same program runs on EC2 nodes
(pgnvme-backup.timer) and beside a local cluster (its backup scheduler), for pgBackRest and WAL-G
alike, so that both archivers follow one rule and only the command lines differ.

  decide.py policy S F W M                Patroni's GET /config on stdin: prints the backup policy
                                          (postgresql.pgnvme_backup: SCHEDULE, FULL_EVERY, WINDOW_DAYS,
                                          MIN_FULL), tab-separated, or the defaults S F W M without one.
  decide.py next TOOL SCHEDULE FULL_EVERY the archive's backup listing on stdin: prints "full", "incr"
                                          or "none", a space, and why.
  decide.py keep TOOL WINDOW_DAYS MIN_FULL the listing on stdin: prints how many full backups (with
                                          what depends on them, and the WAL only they need) to keep.
  decide.py verify-due TIMELINE ARCHIVED STATUS_DIR
                                          the archive's last verification record (or nothing) on stdin:
                                          prints "verify", "wait" or "none", a space, and why.
  decide.py verdict TOOL TIMELINE OUTPUT  the verification's output in the file OUTPUT: prints the
                                          verification record (JSON, one line). The nodes and the
                                          provider's restore drill alike take this verdict.

TOOL is "pgbackrest" (the listing is `pgbackrest --output=json info`) or "walg" (`wal-g backup-list
--detail --json`). The rules:

  - a backup is due when there is none, or when SCHEDULE (a systemd calendar expression, evaluated by
    systemd-analyze) has elapsed since the newest backup started;
  - it is full when there is no full backup, or FULL_EVERY backups (the full one counted) have been
    taken since the newest full one; else incremental (WAL-G: delta);
  - retention keeps every full backup that started inside the last WINDOW_DAYS days, and the newest one
    that started before (a restore to the window's first moment starts from it), and never fewer than
    MIN_FULL. WINDOW_DAYS 0 keeps MIN_FULL full backups;
  - the archive is verified once per timeline of the primary after the first (every timeline switch: a
    failover, a promotion, a restore), when the verification record names an older timeline or none, or
    failed more than RETRY_FAILED seconds ago; and only once the primary's archiver has pushed what the
    switch left (STATUS_DIR, its pg_wal/archive_status, holds no .ready file of an older timeline and
    not the new timeline's history file): the segments a promoted standby handed over, and the history;
    and a complete segment of the new timeline (ARCHIVED, pg_stat_archiver.last_archived_wal): a segment
    the switch lost lies between the old timeline's last archived one and it, and neither tool sees a
    hole at the end of what the archive holds;
  - the verdict is the tool's own findings, read here and nowhere else: pgBackRest (`pgbackrest verify`,
    its log or --output=text) fails on any error it reports and on a stanza status other than ok; WAL-G
    (`wal-g wal-verify integrity timeline --json`) on a FAILURE status of either check or a check
    missing, and passes a WARNING (the newest segments still on their way: see WALG_PASSES). A hole in
    the WAL after the oldest backup's first segment is the provider's rule (archive.Assess, from the
    archive's listing), not the verdict's.

PGNVME_NOW (seconds since the epoch) replaces the clock, for tests.
"""

import datetime
import json
import os
import subprocess
import sys


def now():
    v = os.environ.get("PGNVME_NOW")
    return float(v) if v else datetime.datetime.now(datetime.timezone.utc).timestamp()


def rfc3339(s):
    """Seconds since the epoch of an RFC 3339 time as WAL-G prints it (nanoseconds, Z or an offset)."""
    s = s.strip().replace("Z", "+00:00")
    date, _, rest = s.partition("T")
    clock, tz = rest, ""
    for sign in "+-":
        i = rest.rfind(sign)
        if i > 0:
            clock, tz = rest[:i], rest[i:]
            break
    if "." in clock:
        whole, frac = clock.split(".", 1)
        clock = whole + "." + frac[:6]
    else:
        clock += ".0"
    return datetime.datetime.strptime(date + "T" + clock + tz, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def backups(tool, text):
    """The listing's backups, oldest first, as (start seconds, full?, label)."""
    text = text.strip()
    if not text or text == "null":
        return []
    data = json.loads(text)
    out = []
    if tool == "pgbackrest":
        for stanza in data or []:
            for b in stanza.get("backup") or []:
                out.append((float(b["timestamp"]["start"]), b["type"] == "full", b["label"]))
    elif tool == "walg":
        for b in data or []:
            name = b["backup_name"]
            out.append((rfc3339(b.get("start_time") or b["time"]), "_D_" not in name, name))
    else:
        raise SystemExit("pgnvme-backup-decide: unknown tool %r (pgbackrest or walg)" % tool)
    out.sort()
    return out


def next_elapse(schedule, after):
    """The first time SCHEDULE elapses after the moment after, as systemd computes it."""
    env = dict(os.environ, TZ="UTC", LC_ALL="C")
    r = subprocess.run(["systemd-analyze", "calendar", "--iterations=1", "--base-time=@%d" % int(after), schedule],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit("pgnvme-backup-decide: systemd-analyze refused the schedule %r: %s" % (schedule, r.stderr.strip()))
    for line in r.stdout.splitlines():
        key, _, value = line.strip().partition(": ")
        if key == "Next elapse":
            if value.strip() == "never":
                return None
            return datetime.datetime.strptime(value.strip(), "%a %Y-%m-%d %H:%M:%S UTC").replace(
                tzinfo=datetime.timezone.utc).timestamp()
    raise SystemExit("pgnvme-backup-decide: systemd-analyze printed no next elapse for %r" % schedule)


def when(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def decide_next(tool, schedule, full_every, listing):
    bs = backups(tool, listing)
    if not bs:
        return "full", "the archive holds no backup"
    last = bs[-1][0]
    due = next_elapse(schedule, last)
    t = now()
    if due is None or due > t:
        return "none", "the newest backup %s started %s; the schedule next elapses %s" % (
            bs[-1][2], when(last), "never" if due is None else when(due))
    fulls = [i for i, b in enumerate(bs) if b[1]]
    if not fulls:
        return "full", "the archive holds no full backup"
    since = len(bs) - fulls[-1]
    if since >= full_every:
        return "full", "%d backups since the full backup %s (a full one every %d)" % (since, bs[fulls[-1]][2], full_every)
    return "incr", "%d backups since the full backup %s (a full one every %d)" % (since, bs[fulls[-1]][2], full_every)


def decide_keep(tool, window_days, min_full, listing):
    starts = [b[0] for b in backups(tool, listing) if b[1]]
    keep = 0
    if window_days > 0:
        cutoff = now() - window_days * 86400
        keep = sum(1 for s in starts if s > cutoff)
        if any(s <= cutoff for s in starts):
            keep += 1
    return max(keep, min_full)


RETRY_FAILED = 3600


def record(text):
    text = text.strip()
    try:
        r = json.loads(text) if text else None
    except ValueError:
        return None
    return r if isinstance(r, dict) else None


def decide_verify(timeline, archived, status_dir, last):
    if timeline <= 1:
        return "none", "timeline 1: no switch to verify"
    if last and int(last.get("timeline") or 0) >= timeline:
        if last.get("ok") or now() - rfc3339(last.get("verified_at") or "1970-01-01T00:00:00Z") < RETRY_FAILED:
            return "none", "timeline %d verified %s" % (timeline, last.get("verified_at"))
    history = "%08X.history.ready" % timeline
    waiting = sorted(f for f in os.listdir(status_dir) if f.endswith(".ready") and (
        f == history or (len(f) >= 8 and all(c in "0123456789ABCDEF" for c in f[:8]) and int(f[:8], 16) < timeline)))
    if waiting:
        return "wait", "%d files of the switch to timeline %d still to archive (%s)" % (len(waiting), timeline, waiting[0][:-6])
    if len(archived) != 24 or int(archived[:8], 16) < timeline:
        return "wait", "no complete segment of timeline %d archived yet (the last: %s)" % (timeline, archived or "none")
    return "verify", "timeline %d, %s" % (timeline, "never verified" if not last else "last verified timeline %s (%s)" % (
        last.get("timeline"), "passed" if last.get("ok") else "failed"))


def verdict_pgbackrest(output):
    """pgBackRest's own findings: an ERROR it logged, a stanza whose status is not ok (with what it
    counted), or no result at all. It reads both forms verify writes: the log (--log-level-console=detail: a result block only
    when something is wrong, each WAL range on a DETAIL line) and --output=text (the result block always)."""
    errors, ranges, wal, backups, bad = [], 0, 0, 0, False
    done = "verify command end: completed successfully" in output
    for line in output.splitlines():
        text = line.split(": ", 1)[1] if ("INFO: " in line or "DETAIL: " in line or "ERROR: " in line) else line
        field = text.strip()
        if "ERROR: " in line:
            errors.append(line.split(" P00 ", 1)[-1].strip())
        elif "wal start: " in field and "wal stop: " in field:
            ranges += 1
        elif field.startswith("status: "):
            bad, done = field != "status: ok", True
        elif field.startswith("archiveId: ") and "total WAL checked: " in field:
            wal += int(field.split("total WAL checked: ", 1)[1].split(",", 1)[0])
        elif field.startswith("backup: "):
            backups += 1
        if bad and line.startswith(" ") and not field.startswith("status: ") and ", status: valid," not in field and \
                field != "missing: 0, checksum invalid: 0, size invalid: 0, other: 0":
            errors.append(field)
    if errors or bad:
        return False, "pgbackrest verify: " + ("; ".join(errors) or "status error")
    if not done:
        return False, "pgbackrest verify reported no result: " + (output.strip()[-300:] or "no output")
    if wal or backups:
        return True, "pgbackrest verify: %d WAL segments and %d backups valid" % (wal, backups)
    return True, "pgbackrest verify: %d WAL ranges checked, no error" % ranges


# What wal-verify's statuses mean (WAL-G's integrity and timeline checks). OK passes. WARNING passes too,
# naming what it saw: it means "cannot tell yet", the only missing segments being the newest, which WAL-G
# calls MISSING_DELAYED (not handed to it yet) or MISSING_UPLOADING (within its upload concurrency), or a
# timeline it could not read. FAILURE fails: a segment missing before those (MISSING_LOST), a hole a
# restore cannot replay past, or a newer timeline in the archive than the one checked. A check missing
# from the output fails.
WALG_PASSES = ("OK", "WARNING")


def verdict_walg(output):
    data = json.loads(output)
    fails, notes, found, segments = [], [], 0, 0
    integrity, timeline = data.get("integrity"), data.get("timeline")
    if not isinstance(integrity, dict):
        fails.append("reported no integrity check")
    else:
        status = integrity.get("status")
        for d in integrity.get("details") or []:
            if d.get("status") == "FOUND":
                found, segments = found + 1, segments + (d.get("segments_count") or 0)
                continue
            seg = d.get("start_segment")
            if d.get("end_segment") != seg:
                seg = "%s to %s (%s segments)" % (seg, d.get("end_segment"), d.get("segments_count"))
            (notes if status in WALG_PASSES else fails).append("WAL segment %s is missing (%s)" % (seg, d.get("status")))
        if status not in WALG_PASSES and not fails:
            fails.append("the integrity check's status is %s" % status)
    if not isinstance(timeline, dict):
        fails.append("reported no timeline check")
    elif timeline.get("status") != "OK":
        d = timeline.get("details") or {}
        (notes if timeline.get("status") in WALG_PASSES else fails).append(
            "the timeline check's status is %s (the archive's highest timeline %s, the checked one %s)" % (
                timeline.get("status"), d.get("highest_storage_timeline_id"), d.get("current_timeline_id")))
    if fails:
        return False, "\n".join("wal-g wal-verify: " + f for f in fails + notes)
    detail = "wal-g wal-verify: %d segments on %d timeline ranges found, timeline %s" % (segments, found, timeline.get("status"))
    if notes:
        detail += "; WARNING, not a hole: %s (the newest WAL, still on its way to the archive)" % "; ".join(notes)
    return True, detail


def verdict(tool, timeline, output):
    try:
        if tool == "pgbackrest":
            ok, detail = verdict_pgbackrest(output)
        elif tool == "walg":
            ok, detail = verdict_walg(output)
        else:
            raise SystemExit("pgnvme-backup-decide: unknown tool %r (pgbackrest or walg)" % tool)
    except (ValueError, KeyError, AttributeError, TypeError) as e:
        ok, detail = False, "the verification's output could not be read (%s): %s" % (e, output.strip()[-300:])
    return json.dumps({"tool": tool, "timeline": timeline, "verified_at": when(now()), "ok": ok, "detail": detail[:2000]})


def main(argv):
    if len(argv) >= 2 and argv[1] == "policy" and len(argv) == 6:
        text = sys.stdin.read().strip()
        p = ((json.loads(text) if text else {}).get("postgresql") or {}).get("pgnvme_backup") or {}
        defaults = argv[2:6]
        values = [p.get("schedule"), p.get("full_every"), p.get("recovery_window_days"), p.get("min_full_backups")]
        print("\t".join(str(d if v is None else v) for v, d in zip(values, defaults)))
        return 0
    if len(argv) == 5 and argv[1] == "next":
        print(" ".join(decide_next(argv[2], argv[3], int(argv[4]), sys.stdin.read())))
        return 0
    if len(argv) == 5 and argv[1] == "keep":
        print(decide_keep(argv[2], int(argv[3]), int(argv[4]), sys.stdin.read()))
        return 0
    if len(argv) == 5 and argv[1] == "verify-due":
        print(" ".join(decide_verify(int(argv[2]), argv[3], argv[4], record(sys.stdin.read()))))
        return 0
    if len(argv) == 5 and argv[1] == "verdict":
        with open(argv[4]) as f:
            output = f.read()
        print(verdict(argv[2], int(argv[3]), output))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
