#!/usr/bin/env bash
# Builds the container image the guest roles' molecule scenarios run in, once per machine/CI run.
#   bash miglab/sim/build-images.sh          as root on a fresh Debian 12; safe to re-run
#   eval "$(bash miglab/sim/build-images.sh --env)"   only print the environment it needs
# Caches (stamp, containers.conf, debootstrap's log) go to the project's .cache (MIGLAB_PROJECT_DIR,
# else the current directory); the image to podman's storage.
#
# What it does (the measured recipe in ../shared/notes/environment.md):
#   1. apt-get install podman runc debootstrap (+ what the recipe needs);
#   2. writes .cache/containers/containers.conf (runc, small nofile/nproc ulimits: crun fails here
#      with "cgroups in hybrid mode not supported" and a large RLIMIT_NPROC is refused);
#   3. debootstraps Debian 12 (minbase + python3, systemd, sudo) and imports it as
#      localhost/miglab-debian12:latest with CMD /sbin/init; apt's package lists are fetched in
#      the image so roles can use cache_valid_time instead of updating in every scenario.
# The image's label miglab.recipe holds this script's recipe hash: the next run, from any project
# on the machine (the image is the machine's), is a no-op while it matches.
# MIGLAB_REBUILD_IMAGES=1 forces a rebuild.
set -euo pipefail

CACHE=${MIGLAB_PROJECT_DIR:-$PWD}/.cache  # the project's caches
CONF=$CACHE/containers/containers.conf
IMAGE=${MIGLAB_GUEST_IMAGE:-localhost/miglab-debian12:latest}
MIRROR=${MIGLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm

print_env() {
  printf 'export CONTAINERS_CONF=%q\n' "$CONF"
  printf 'export MIGLAB_GUEST_IMAGE=%q\n' "$IMAGE"
}
if [ "${1:-}" = --env ]; then
  print_env
  exit 0
fi

log() { printf '[build-images] %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "run me as root (podman rootful, debootstrap)"; exit 1; }

# 1. Packages.
missing=()
for pkg in podman runc debootstrap uidmap slirp4netns fuse-overlayfs ca-certificates; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. containers.conf.
mkdir -p "$(dirname "$CONF")" "$CACHE/images"
want_conf='[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"'
if [ "$(cat "$CONF" 2>/dev/null)" != "$want_conf" ]; then
  log "writing $CONF"
  printf '%s\n' "$want_conf" >"$CONF"
fi
export CONTAINERS_CONF=$CONF

# 3. The image.
recipe=$(sed -n '/^# --- recipe ---$/,/^# --- end recipe ---$/p' "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
have=$(podman image inspect --format '{{index .Labels "miglab.recipe"}}' "$IMAGE" 2>/dev/null || true)
if [ -z "${MIGLAB_REBUILD_IMAGES:-}" ] && [ "$have" = "$recipe" ]; then
  log "$IMAGE is up to date (recipe $recipe)"
  print_env
  exit 0
fi

# --- recipe ---
build=$(mktemp -d "$CACHE/images/rootfs.XXXXXX")
trap 'rm -rf "$build"' EXIT
log "debootstrap $SUITE from $MIRROR (about 40 s)"
debootstrap --variant=minbase --include=python3,python3-apt,systemd,systemd-sysv,dbus,sudo,ca-certificates,gnupg,kmod \
  "$SUITE" "$build/root" "$MIRROR" >"$CACHE/images/debootstrap.log" 2>&1 ||
  { tail -n 30 "$CACHE/images/debootstrap.log" >&2; exit 1; }
cat >"$build/root/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
EOF
# Package lists baked in: scenarios use cache_valid_time and skip `apt-get update`.
chroot "$build/root" apt-get update -qq
# A container has no consoles to spawn gettys on, and no kernel for these units.
for unit in getty@tty1.service console-getty.service systemd-remount-fs.service \
  sys-kernel-config.mount systemd-firstboot.service; do
  chroot "$build/root" systemctl mask "$unit" >/dev/null 2>&1 || true
done
# PID 1: a privileged container on this cgroup v1 host sees the host's whole name=systemd
# hierarchy, and systemd would move itself to that hierarchy's root, sharing init.scope and
# system.slice with every other such container: one stopping then stops the others' services and
# removes their emptied cgroups ("runc: exec failed: ... cgroup.procs: no such file or
# directory"). /sbin/init first bind-mounts the container's own cgroup over the hierarchy, so
# systemd sees only its part (diverted, so that a systemd-sysv upgrade keeps it).
chroot "$build/root" dpkg-divert --quiet --local --rename --divert /sbin/init.systemd --add /sbin/init
cat >"$build/root/sbin/init" <<'INIT'
#!/bin/sh
# miglab's test containers (miglab/sim/build-images.sh): systemd sees only its own cgroup.
root=/sys/fs/cgroup/systemd
if [ "$$" = 1 ] && [ -d "$root" ]; then
  # This PID namespace's PID 1 shows as "1" only in the cgroup.procs of its own cgroup.
  own=$(find "$root" -mindepth 2 -maxdepth 4 -name cgroup.procs -exec grep -lx 1 {} + 2>/dev/null |
    head -n 1)
  [ -n "$own" ] && mount --bind "${own%/cgroup.procs}" "$root" 2>/dev/null
fi
exec /lib/systemd/systemd "$@"
INIT
chmod 0755 "$build/root/sbin/init"
echo miglab-guest >"$build/root/etc/hostname"
: >"$build/root/etc/machine-id"
chroot "$build/root" apt-get clean
log "podman import -> $IMAGE"
tar -C "$build/root" -c . |
  podman import -q --change 'CMD ["/sbin/init"]' --change "LABEL miglab.recipe=$recipe" - "$IMAGE" >/dev/null
# --- end recipe ---

image_id=$(podman image inspect --format '{{.Id}}' "$IMAGE")
log "built $IMAGE (${image_id:0:12})"
print_env
