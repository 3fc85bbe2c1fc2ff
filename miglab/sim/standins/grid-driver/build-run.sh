#!/usr/bin/env bash
# Builds a STAND-IN of NVIDIA's GRID (vGPU) guest driver installer for the miglab tests:
#   build-run.sh VERSION CUDA_VERSION OUT_DIR   -> OUT_DIR/NVIDIA-Linux-x86_64-VERSION-grid.run
# Like the real file it is a self-extracting shell script (a makeself-style header followed by a
# gzip'ed tar payload) that runs the nvidia-installer inside it with the options it was given:
#   sh NVIDIA-Linux-x86_64-VERSION-grid.run --version     nvidia-installer:  version VERSION ...
#   sh NVIDIA-Linux-x86_64-VERSION-grid.run --silent --dkms
#   sh NVIDIA-Linux-x86_64-VERSION-grid.run --info | -x
# Nothing is downloaded; the nvidia-smi output is built from real captures (captures/README.md).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 VERSION CUDA_VERSION OUT_DIR" >&2; exit 2; }
VERSION=$1 CUDA=$2 OUT=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FIXTURES=$HERE/captures
NAME=NVIDIA-Linux-x86_64-$VERSION-grid
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/$NAME"
cp "$HERE"/nvidia-installer "$HERE"/nvidia-smi "$HERE"/nvidia-gridd "$HERE"/nvidia-gridd.service \
  "$HERE"/nvidia-persistenced "$HERE"/standin_kernel.py \
  "$HERE"/gridd.conf.template "$work/$NAME/"
cp "$FIXTURES/h200-q.txt" "$work/$NAME/nvidia-smi-q.txt"
cp "$FIXTURES/h200-nvidia-smi.txt" "$work/$NAME/nvidia-smi.txt"
# A fixed build date keeps the file byte-identical for the same VERSION (stable checksums).
printf '{"version": "%s", "cuda": "%s", "built": "Thu Jan  1 00:00:00 UTC 2026", "standin": true}\n' \
  "$VERSION" "$CUDA" >"$work/$NAME/manifest.json"
chmod 755 "$work/$NAME"/nvidia-installer "$work/$NAME"/nvidia-smi "$work/$NAME"/nvidia-gridd \
  "$work/$NAME"/nvidia-persistenced
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@1767225600 -C "$work" -cf - "$NAME" |
  gzip -n -9 >"$work/payload.tgz"

cat >"$work/$NAME.run" <<HEADER
#!/bin/sh
# miglab STAND-IN for NVIDIA's $NAME.run (miglab/sim/standins/grid-driver/build-run.sh).
# Not NVIDIA software: it installs nvidia-smi / nvidia-gridd stand-ins for role tests.
label="NVIDIA Accelerated Graphics Driver for Linux-x86_64 $VERSION"
target="$NAME"
skip=\$(awk '/^__MIGLAB_STANDIN_PAYLOAD__\$/ { print NR + 1; exit 0 }' "\$0")
case "\$1" in
  --info)
    echo "Identification: \$label"
    echo "Target directory: \$target"
    echo "Compression: gzip"
    echo "miglab STAND-IN (miglab/sim/standins/grid-driver)"
    exit 0 ;;
  -x|--extract-only)
    tail -n +"\$skip" "\$0" | tar xzf - || exit 1
    echo "Creating directory \$target"
    exit 0 ;;
esac
tmp=\$(mktemp -d "\${TMPDIR:-/tmp}/selfgz.XXXXXX") || exit 1
tail -n +"\$skip" "\$0" | tar xzf - -C "\$tmp" || { rm -rf "\$tmp"; exit 1; }
"\$tmp/\$target/nvidia-installer" "\$@"
rc=\$?
rm -rf "\$tmp"
exit \$rc
__MIGLAB_STANDIN_PAYLOAD__
HEADER
cat "$work/payload.tgz" >>"$work/$NAME.run"
chmod 755 "$work/$NAME.run"
mv "$work/$NAME.run" "$OUT/$NAME.run"
echo "$OUT/$NAME.run"
