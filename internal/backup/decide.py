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

TOOL is "pgbackrest" (the listing is `pgbackrest --output=json info`) or "walg" (`wal-g backup-list
--detail --json`). The rules:

  - a backup is due when there is none, or when SCHEDULE (a systemd calendar expression, evaluated by
    systemd-analyze) has elapsed since the newest backup started;
  - it is full when there is no full backup, or FULL_EVERY backups (the full one counted) have been
    taken since the newest full one; else incremental (WAL-G: delta);
  - retention keeps every full backup that started inside the last WINDOW_DAYS days, and the newest one
    that started before (a restore to the window's first moment starts from it), and never fewer than
    MIN_FULL. WINDOW_DAYS 0 keeps MIN_FULL full backups.

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
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
