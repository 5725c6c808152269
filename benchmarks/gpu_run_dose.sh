#!/bin/sh
# `shmdoctor run` around a real CUDA loop (benchmarks/cuda_loop.py) in a 256 MiB /dev/shm, no loader options; then
# the clean command it prescribes, and the same loop in a /dev/shm of the size it prescribes. Each in a private
# mount namespace with its own tmpfs at /dev/shm (root). Raw files in $OUT; docs/gpu-run-dose.md reads them.
OUT=${OUT:-/tmp/gpu-run-dose}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
python -c "import torch, sys; print(torch.__version__, torch.version.cuda, sys.version.split()[0])" >> "$OUT/gpu.txt"
in_shm() {  # SIZE NAME: run's report and output, then what is left in /dev/shm, clean's output, and what stays
    unshare -m sh -c "mount -t tmpfs -o size=$1 tmpfs /dev/shm &&
        python -m shmdoctor run --report $OUT/$2.json -- python benchmarks/cuda_loop.py > $OUT/$2.stdout 2> $OUT/$2.stderr
        echo \$? > $OUT/$2.exit
        ls -ls /dev/shm > $OUT/$2.left
        clean=\$(python -c \"import json; print((json.load(open('$OUT/$2.json'))['leftovers'] or {}).get('clean') or '')\")
        if [ -n \"\$clean\" ]; then python -m \${clean%%#*} > $OUT/$2.clean 2>&1; ls -ls /dev/shm >> $OUT/$2.clean; fi"
}
in_shm 256m run-256m
SIZE=$(python -c "
import json
doc = json.load(open('$OUT/run-256m.json'))
print(next(f['shm_bytes'] for x in doc['explanation']['findings'] for f in x['fixes'] if f['shm_bytes']))")
echo "$SIZE" > "$OUT/prescribed_bytes"
in_shm "$SIZE" run-prescribed
