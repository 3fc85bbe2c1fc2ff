#!/usr/bin/env bash
# Builds the ESXi shell stand-in image (localhost/miglab-esxi-standin:latest) FROM the Debian 12
# image of miglab/sim/build-images.sh, once per recipe (the image's label miglab.recipe, so any
# project on the machine reuses it); prints the environment the ESXi molecule scenarios need:
#   eval "$(bash miglab/sim/standins/esxi/build-image.sh)"
#   CONTAINERS_CONF, MIGLAB_GUEST_IMAGE (from miglab/sim/build-images.sh), MIGLAB_ESXI_STANDIN_IMAGE,
#   MIGLAB_ESXI_STANDIN_KEY (the SSH key Ansible logs in with; .pub is mounted into the containers)
# As root on Debian 12 (podman). MIGLAB_REBUILD_IMAGES=1 forces a rebuild.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${MIGLAB_PROJECT_DIR:-$PWD}/.cache  # the project's caches
IMAGE=${MIGLAB_ESXI_STANDIN_IMAGE:-localhost/miglab-esxi-standin:latest}
KEY=$CACHE/esxi-standin/id_ed25519
log() { printf '[esxi-standin] %s\n' "$*" >&2; }

eval "$(bash "$HERE/../../build-images.sh")"   # podman, containers.conf, the Debian 12 image
base_id=$(podman image inspect --format '{{.Id}}' "$MIGLAB_GUEST_IMAGE")
want=$( (cd "$HERE" && cat Containerfile README.md esxi_standin.py datastore-README.txt bin/*; echo "$base_id") |
  sha256sum | cut -c1-16)
have=$(podman image inspect --format '{{index .Labels "miglab.recipe"}}' "$IMAGE" 2>/dev/null || true)
if [ -n "${MIGLAB_REBUILD_IMAGES:-}" ] || [ "$have" != "$want" ]; then
  log "podman build -> $IMAGE"
  podman build -q --build-arg "BASE=$MIGLAB_GUEST_IMAGE" --label "miglab.recipe=$want" -t "$IMAGE" \
    -f "$HERE/Containerfile" "$HERE" >/dev/null
else
  log "$IMAGE is up to date"
fi
if [ ! -f "$KEY" ]; then
  mkdir -p "$(dirname "$KEY")"
  ssh-keygen -q -t ed25519 -N '' -C miglab-esxi-standin -f "$KEY"
fi
printf 'export CONTAINERS_CONF=%q\n' "$CONTAINERS_CONF"
printf 'export MIGLAB_GUEST_IMAGE=%q\n' "$MIGLAB_GUEST_IMAGE"
printf 'export MIGLAB_ESXI_STANDIN_IMAGE=%q\n' "$IMAGE"
printf 'export MIGLAB_ESXI_STANDIN_KEY=%q\n' "$KEY"
