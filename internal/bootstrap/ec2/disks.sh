#!/bin/bash
# pgnvme: prepares the instance-store NVMe of node {{.Node}} in cluster {{.Cluster}}, on every boot
# (pgnvme-disks.service), before the database starts. A stop/start keeps the instance but wipes its
# instance store, so this cannot be a once-per-instance step.
#
#  1. The disks are found as AWS's EKS AMI finds them: the links matching {{.DiskGlob}},
#     resolved and de-duplicated (each disk has several links, and device names change between
#     starts). It waits until all {{.DiskCount}} are there.
#  2. One disk is used as it is; several make an md RAID0 array, assembled again when the disks
#     carry it and created when they are blank. No mdadm.conf is written: it would outlive the disks.
#  3. A blank device gets an XFS file system; any other file system stops the script.
#  4. The file system is mounted by UUID with noatime,nofail on {{.MountPoint}}, and the data
#     directory made one level below it. The database unit has RequiresMountsFor= on the data
#     directory and AssertPathIsMountPoint= on the mount point: with the instance store unmounted,
#     there is no data directory to start an empty PostgreSQL in on the root disk.
#
# With PGNVME_DISKS_DRY_RUN=1 it prints the commands that would change something instead of running
# them (it still reads the disks).
set -euo pipefail
shopt -s nullglob
export LC_ALL=C

DISK_GLOB={{sh .DiskGlob}}
DISK_COUNT={{.DiskCount}}
DISK_WAIT_SECONDS={{.DiskWaitSeconds}}
MD_NAME={{sh .MDName}}
MD_DEVICE={{sh .MDDevice}}
MOUNT_POINT={{sh .MountPoint}}
MOUNT_UNIT={{sh .MountUnit}}
UNIT_DIR={{sh .UnitDir}}
DATA_DIR={{sh .DataDir}}
OTHER_DIRS=({{words .OtherDirs}})
OWNER=postgres
DRY_RUN=${PGNVME_DISKS_DRY_RUN:-}

DISKS=()
DEVICE=
UUID=

log() { printf 'pgnvme-disks: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}
# run runs a command that changes something, or prints it in a dry run.
run() {
  if [ -n "$DRY_RUN" ]; then
    printf '+ %s\n' "$*"
  else
    "$@"
  fi
}
settle() {
  if [ -z "$DRY_RUN" ] && command -v udevadm >/dev/null 2>&1; then
    udevadm settle --timeout=30 || true
  fi
}

# find_disks prints every instance-store disk once, sorted.
find_disks() {
  local link
  # shellcheck disable=SC2086 # the pattern is meant to expand
  for link in $DISK_GLOB; do
    case $link in *-part[0-9]*) continue ;; esac
    readlink -f -- "$link"
  done | sort -u
}

wait_for_disks() {
  local deadline=$((SECONDS + DISK_WAIT_SECONDS)) disk target
  while :; do
    mapfile -t DISKS < <(find_disks)
    if [ "${#DISKS[@]}" -ge "$DISK_COUNT" ] || [ "$SECONDS" -ge "$deadline" ]; then
      break
    fi
    settle
    sleep 1
  done
  if [ "${#DISKS[@]}" -ne "$DISK_COUNT" ]; then
    die "found ${#DISKS[@]} instance-store disks matching $DISK_GLOB (${DISKS[*]:-none}), expected $DISK_COUNT: the node was rendered for another instance type, or its disks are missing"
  fi
  for disk in "${DISKS[@]}"; do
    [ -b "$disk" ] || die "$disk, found through $DISK_GLOB, is not a block device"
    while read -r target; do
      if [ -n "$target" ] && [ "$target" != "$MOUNT_POINT" ]; then
        die "$disk is mounted on $target; an instance-store disk belongs to pgnvme alone"
      fi
    done < <(findmnt -rn -o TARGET -S "$disk" || true)
  done
  log "instance-store disks: ${DISKS[*]}"
}

# holder prints the md device (such as md127) that holds disk $1, if any.
holder() {
  local h
  for h in /sys/class/block/"${1##*/}"/holders/md*; do
    printf '%s\n' "${h##*/}"
    return
  done
}

# raid_device sets DEVICE to the RAID0 array of the disks: the one running, assembled again, or new.
raid_device() {
  local disk h md="" held=0 blank=0 state
  for disk in "${DISKS[@]}"; do
    h=$(holder "$disk")
    [ -n "$h" ] || continue
    held=$((held + 1))
    if [ -n "$md" ] && [ "$md" != "$h" ]; then
      die "the disks belong to different md arrays ($md, $h): replace the node, or stop them (mdadm --stop) and restart pgnvme-disks"
    fi
    md=$h
  done
  if [ -n "$md" ]; then
    state=$(cat "/sys/class/block/$md/md/array_state" 2>/dev/null || echo unknown)
    if [ "$held" -eq "$DISK_COUNT" ] && [ "$state" != inactive ]; then
      log "the array /dev/$md of all $DISK_COUNT disks is running ($state)"
      DEVICE=/dev/$md
      return
    fi
    log "/dev/$md holds $held of $DISK_COUNT disks ($state); stopping it to assemble it from all of them"
    run mdadm --stop "/dev/$md"
  fi
  for disk in "${DISKS[@]}"; do
    if ! mdadm --examine "$disk" >/dev/null 2>&1; then
      blank=$((blank + 1))
    fi
  done
  if [ "$blank" -eq 0 ]; then
    log "the disks carry the array; assembling it"
    run mdadm --assemble "$MD_DEVICE" "${DISKS[@]}"
  elif [ "$blank" -eq "$DISK_COUNT" ]; then
    log "the disks are blank (a new instance, or a stop/start wiped them); creating a RAID0 array"
    run mdadm --create "$MD_DEVICE" --run --level=0 --raid-devices="$DISK_COUNT" --name="$MD_NAME" --homehost=any "${DISKS[@]}"
  else
    die "$((DISK_COUNT - blank)) of $DISK_COUNT disks carry an md superblock and $blank do not: replace the node, or wipe them all (mdadm --zero-superblock) to start empty"
  fi
  settle
  DEVICE=$MD_DEVICE
}

make_filesystem() {
  local fstype
  fstype=$(blkid -p -o value -s TYPE "$DEVICE" 2>/dev/null || true)
  case $fstype in
    xfs)
      log "$DEVICE holds an XFS file system; keeping it"
      ;;
    "")
      log "$DEVICE is blank; making an XFS file system"
      # -K: instance store comes trimmed. -l su=8b: an array's 512k stripe is more than the
      # largest log stripe unit XFS takes.
      run mkfs.xfs -K -L pgnvme -l su=8b "$DEVICE"
      settle
      ;;
    *)
      die "$DEVICE holds a $fstype file system, not XFS: refusing to format it; replace the node, or wipe it (wipefs -a $DEVICE) and restart pgnvme-disks"
      ;;
  esac
  UUID=$(blkid -p -o value -s UUID "$DEVICE" 2>/dev/null || true)
  if [ -z "$UUID" ] && [ -n "$DRY_RUN" ]; then
    UUID="<uuid of $DEVICE>"
  fi
  [ -n "$UUID" ] || die "$DEVICE has no file system UUID after mkfs.xfs"
}

# mount_unit prints the mount unit of this boot's file system.
mount_unit() {
  cat <<EOF
# Written by pgnvme-disks.service for this boot's file system on the instance store.
[Unit]
Description=Instance-store NVMe of node {{.Node}} (pgnvme)

[Mount]
What=/dev/disk/by-uuid/$UUID
Where=$MOUNT_POINT
Type=xfs
Options=noatime,nofail
EOF
}

mount_filesystem() {
  local current
  if mountpoint -q "$MOUNT_POINT"; then
    current=$(findmnt -rn -o UUID --mountpoint "$MOUNT_POINT" || true)
    if [ "$current" != "$UUID" ]; then
      die "$MOUNT_POINT has another file system mounted (UUID ${current:-none}), not the instance store's ($UUID); unmount it and restart pgnvme-disks"
    fi
  fi
  if [ -d /run/systemd/system ]; then
    # Under systemd a mount unit, rewritten for this boot's UUID, mounts it; the database unit
    # requires that unit through RequiresMountsFor=.
    if [ "$(cat "$UNIT_DIR/$MOUNT_UNIT" 2>/dev/null || true)" != "$(mount_unit)" ]; then
      if [ -n "$DRY_RUN" ]; then
        printf '+ write %s\n' "$UNIT_DIR/$MOUNT_UNIT"
      else
        mount_unit >"$UNIT_DIR/$MOUNT_UNIT"
      fi
      run systemctl daemon-reload
    fi
    run systemctl start "$MOUNT_UNIT"
  elif [ -z "${current:-}" ]; then
    run mkdir -p "$MOUNT_POINT"
    run mount -t xfs -o noatime,nofail "UUID=$UUID" "$MOUNT_POINT"
  else
    log "$DEVICE is already mounted on $MOUNT_POINT"
  fi
  if [ -z "$DRY_RUN" ] && ! mountpoint -q "$MOUNT_POINT"; then
    die "$MOUNT_POINT is not a mount point after mounting $DEVICE"
  fi
}

wait_for_disks
if [ "$DISK_COUNT" -eq 1 ]; then
  DEVICE=${DISKS[0]}
else
  raid_device
fi
make_filesystem
mount_filesystem
# The file system is the server's alone, its root included: Patroni sets the data directory of a failed
# bootstrap aside there (data.failed) and the restore's bootstrap removes it, both as the server's user. With
# a root-owned mount point the rename failed, Patroni exited, and when it came back it started the half-
# recovered copy and could win the leader race with it.
run install -d -m 0700 -o "$OWNER" -g "$OWNER" "$MOUNT_POINT"
run install -d -m 0700 -o "$OWNER" -g "$OWNER" "$DATA_DIR" "${OTHER_DIRS[@]}"
log "ready: $DEVICE (UUID $UUID) on $MOUNT_POINT, data directory $DATA_DIR"
