#!/usr/bin/env bash
# Builds every stand-in the guest roles' molecule scenarios use into OUT_DIR (idempotent; the
# outputs are byte-identical for the same sources, so their checksums are stable):
#   NVIDIA-Linux-x86_64-535.216.01-grid.run, NVIDIA-Linux-x86_64-550.144.03-grid.run
#   nvidia-container-toolkit-base_1.17.8-1_<arch>.deb, nvidia-container-toolkit_1.17.8-1_<arch>.deb
#   miglab-standin-vgpu-vm_1.0-1_all.deb (the kernel of a VM with a vGPU: nouveau, module use)
#   client_configuration_token_standin.tok (license server dls.lab.example),
#   client_configuration_token_never.tok   (license server dls.never.invalid: never licenses)
#   token-sentinel.txt (the string whose presence in a log means the token leaked)
#   nvidia-harness/<round>/ (NVIDIA's MLPerf harness folder of each round, closed/NVIDIA: the
#   stand-ins of nvidia-harness/, assembled afresh; the lab's miglab_harness_sources)
#   SHA256SUMS, and standins.yml: the same as Ansible variables (miglab_standins: name -> path
#   (also as src) and checksum) for the molecule scenarios' vars_files
# Usage: miglab/sim/standins/build.sh OUT_DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$1
mkdir -p "$OUT"
"$HERE/grid-driver/build-run.sh" 535.216.01 12.2 "$OUT" >/dev/null
"$HERE/grid-driver/build-run.sh" 550.144.03 12.4 "$OUT" >/dev/null
"$HERE/container-toolkit/build-debs.sh" 1.17.8 "$OUT" >/dev/null
"$HERE/vgpu-vm/build-deb.sh" "$OUT" >/dev/null
python3 "$HERE/make-token.py" dls.lab.example "$OUT/client_configuration_token_standin.tok"
python3 "$HERE/make-token.py" dls.never.invalid "$OUT/client_configuration_token_never.tok"
echo MIGLAB_TOKEN_SENTINEL_d41f8a >"$OUT/token-sentinel.txt"
for round in $(python3 -c "import sys; sys.path.insert(0, '$HERE/nvidia-harness'); import assemble; print(*assemble.rounds())"); do
  rm -rf "$OUT/nvidia-harness/$round"  # pristine: miglab writes its entries into the copies
  python3 "$HERE/nvidia-harness/assemble.py" "$round" "$OUT/nvidia-harness/$round" >/dev/null
done
chmod 0600 "$OUT"/*.tok  # licence tokens are secrets: readable by their owner only
(cd "$OUT" && sha256sum -- *.run *.deb *.tok >SHA256SUMS)
{
  echo "# Written by miglab/sim/standins/build.sh: the stand-ins in this folder, for molecule."
  echo "miglab_standins_dir: $OUT"
  echo "miglab_standins:"
  while read -r sum name; do
    printf '  %s: {path: %s/%s, src: %s/%s, checksum: "sha256:%s"}\n' "$name" "$OUT" "$name" "$OUT" "$name" "$sum"
  done <"$OUT/SHA256SUMS"
} >"$OUT/standins.yml"
echo "$OUT"
