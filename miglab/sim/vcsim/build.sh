#!/usr/bin/env bash
# Builds miglab's vSphere simulator (miglab/sim/vcsim: govmomi's vcsim modelling a GPU lab) offline
# from Debian's Go toolchain and govmomi sources; prints the binary's path. Safe to re-run: Debian
# packages are installed only when missing (as root) and the build is skipped when a stamp (sha256
# of the Go sources and the overlay) matches.
#
# GOPATH mode (GO111MODULE=off): GOPATH lists an overlay tree first, then Debian's GOPATH
# (/usr/share/gocode). The overlay is .cache/vcsim/gopath of the project (MIGLAB_PROJECT_DIR, else
# the current directory): Debian's govmomi mirrored as symbolic
# links, with the patched files of miglab/sim/vcsim/overlay/src/ (same layout as a GOPATH's src/)
# copied over their links. Each patched file says at its top what was changed and why.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # miglab/sim/vcsim, in a checkout or installed
OVERLAY=$SRC/overlay/src
CACHE=${MIGLAB_PROJECT_DIR:-$PWD}/.cache  # the project's caches
OUT=$CACHE/vcsim
BIN=$OUT/miglab-vcsim
STAMP=$OUT/stamp

log() { printf '[build-vcsim] %s\n' "$*" >&2; }

# 1. Debian packages: Go 1.19 and govmomi 0.24's sources.
missing=()
for pkg in golang-go golang-github-vmware-govmomi-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "missing Debian packages (${missing[*]}) and cannot install them (needs root and apt-get)"
    exit 3
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian's GOPATH: the folder above src/ holding govmomi's sources.
DEB_GOPATH=$(dpkg -L golang-github-vmware-govmomi-dev |
  sed -n 's#^\(.*\)/src/github.com/vmware/govmomi/simulator$#\1#p' | head -n1)
if [ -z "$DEB_GOPATH" ]; then
  log "cannot find govmomi's simulator in golang-github-vmware-govmomi-dev"
  exit 1
fi
GO=$(command -v go || echo /usr/lib/go/bin/go)

# 2. Skip the build when nothing changed (one build at a time: test runs may start together).
mkdir -p "$OUT"
exec 9>"$OUT/lock"
flock 9
want=$(
  cd "$SRC"
  {
    find . -name '*.go' -type f -print0 | sort -z | xargs -0 sha256sum
    sha256sum <"$SRC/build.sh"
    dpkg-query -W -f='${Package} ${Version}\n' golang-go golang-github-vmware-govmomi-dev
  } | sha256sum | cut -c1-32
)
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
  echo "$BIN"
  exit 0
fi

# 3. The overlay GOPATH. Go picks, for an import path, the first GOPATH entry holding that
# directory (even one without Go files), so the repository of each patched package
# (github.com/vmware/govmomi) is mirrored whole as symbolic links to Debian's files, then the
# patched files replace their links.
GOPATH_OVERLAY=$OUT/gopath
rm -rf "$GOPATH_OVERLAY"
while IFS= read -r file; do
  rel=${file#"$OVERLAY"/}
  repo=$(cut -d/ -f1-3 <<<"$rel")
  if [ ! -d "$GOPATH_OVERLAY/src/$repo" ]; then
    mkdir -p "$GOPATH_OVERLAY/src/$(dirname "$repo")"
    cp -rs "$DEB_GOPATH/src/$repo" "$GOPATH_OVERLAY/src/$repo"
  fi
  rm -f "$GOPATH_OVERLAY/src/$rel"
  cp "$file" "$GOPATH_OVERLAY/src/$rel"
done < <(find "$OVERLAY" -name '*.go' -type f | sort)

# 4. Build, offline.
log "building $BIN"
start=$(date +%s)
(
  cd "$SRC"
  export GO111MODULE=off GOFLAGS= GOPROXY=off GOPATH="$GOPATH_OVERLAY:$DEB_GOPATH"
  export GOCACHE=${GOCACHE:-$OUT/go-build}
  # Debian's Go ships the standard library precompiled with cgo; without a C compiler the build
  # needs CGO_ENABLED=0, which recompiles it (about 15 s more).
  command -v "$("$GO" env CC 2>/dev/null || echo gcc)" >/dev/null 2>&1 || export CGO_ENABLED=0
  "$GO" build -ldflags="-s -w" -o "$BIN.tmp" .
)
mv -f "$BIN.tmp" "$BIN"
echo "$want" >"$STAMP"
log "built in $(($(date +%s) - start)) s"
echo "$BIN"
