#!/usr/bin/env bash
# Builds STAND-IN .deb packages of the NVIDIA container toolkit for the miglab tests:
#   build-debs.sh VERSION OUT_DIR
#     -> OUT_DIR/nvidia-container-toolkit-base_VERSION-1_ARCH.deb  (nvidia-ctk,
#        nvidia-container-runtime, /etc/nvidia-container-runtime/config.toml)
#     -> OUT_DIR/nvidia-container-toolkit_VERSION-1_ARCH.deb       (nvidia-container-runtime-hook;
#        Depends: nvidia-container-toolkit-base (= VERSION-1))
# Package names, split and file paths follow NVIDIA's packages; the libnvidia-container1 /
# libnvidia-container-tools dependencies of the real nvidia-container-toolkit are left out: the
# hook stand-in does nvidia-container-cli's requirement check and driver mounts itself, with the
# requirement code of the miglab.lab collection, plugins/module_utils/miglab_cuda.py, COPIED into
# the package (/usr/lib/miglab-standin/nvidia-container-toolkit/miglab_cuda.py): the stand-in runs
# the code the guest_container_toolkit role checks images with, no second implementation. Found
# next to this checkout's miglab package, else in the installed collection, else at
# $MIGLAB_CUDA_MODULE_UTILS. Built with dpkg-deb, byte-identical for the same VERSION and sources.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 VERSION OUT_DIR" >&2; exit 2; }
VERSION=$1 OUT=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ARCH=$(dpkg --print-architecture)
export SOURCE_DATE_EPOCH=1767225600
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

package() { # name description depends files...
  local name=$1 desc=$2 depends=$3
  shift 3
  local root=$work/$name
  mkdir -p "$root/DEBIAN"
  while [ $# -gt 0 ]; do
    install -D -m "$3" "$1" "$root/$2"
    shift 3
  done
  {
    echo "Package: $name"
    echo "Version: $VERSION-1"
    echo "Architecture: $ARCH"
    echo "Maintainer: miglab tests <miglab@example.invalid>"
    [ -n "$depends" ] && echo "Depends: $depends"
    echo "Section: utils"
    echo "Priority: optional"
    echo "Description: STAND-IN of NVIDIA's $name (miglab tests)"
    echo " $desc"
    echo " Built by miglab/sim/standins/container-toolkit/build-debs.sh; not NVIDIA software."
  } >"$root/DEBIAN/control"
  if [ -d "$root/etc" ]; then
    (cd "$root" && find etc -type f | sed 's#^#/#') >"$root/DEBIAN/conffiles"
  fi
  find "$root" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$OUT/${name}_$VERSION-1_$ARCH.deb" >/dev/null
  echo "$OUT/${name}_$VERSION-1_$ARCH.deb"
}

CUDA_UTILS=${MIGLAB_CUDA_MODULE_UTILS:-$HERE/../../../../plugins/module_utils/miglab_cuda.py}
if [ ! -f "$CUDA_UTILS" ]; then
  CUDA_UTILS=$(python3 -c 'from miglab.adapters.ansible_inventory import collection_path
p = collection_path("miglab.lab")
print(p / "plugins/module_utils/miglab_cuda.py" if p else "")' 2>/dev/null || true)
fi
[ -f "$CUDA_UTILS" ] || {
  echo "$0: plugins/module_utils/miglab_cuda.py of the miglab.lab collection not found" \
    "(set MIGLAB_CUDA_MODULE_UTILS)" >&2
  exit 1
}

sed "s/@VERSION@/$VERSION/" "$HERE/nvidia-ctk" >"$work/nvidia-ctk"
sed "s/@VERSION@/$VERSION/" "$HERE/nvidia-container-runtime-hook" >"$work/nvidia-container-runtime-hook"
package nvidia-container-toolkit-base \
  "nvidia-ctk and nvidia-container-runtime (legacy mode: adds the prestart hook, then runc)." \
  "runc, python3" \
  "$work/nvidia-ctk" usr/bin/nvidia-ctk 0755 \
  "$HERE/nvidia-container-runtime" usr/bin/nvidia-container-runtime 0755 \
  "$HERE/config.toml" etc/nvidia-container-runtime/config.toml 0644
package nvidia-container-toolkit \
  "nvidia-container-runtime-hook (requirement check and driver mounts of nvidia-container-cli)." \
  "nvidia-container-toolkit-base (= $VERSION-1), python3" \
  "$work/nvidia-container-runtime-hook" usr/bin/nvidia-container-runtime-hook 0755 \
  "$CUDA_UTILS" usr/lib/miglab-standin/nvidia-container-toolkit/miglab_cuda.py 0644
