#!/usr/bin/env bash
# GPU benchmarks, one prepared script for a CUDA machine (README, "GPU benchmarks"):
#   SGNS on a text8-sized corpus (words/s), the neural LMs' and the NMT models'
#   training tokens per second (fp32, bf16 autocast + TF32, bf16 + torch.compile),
#   and batched beam decoding (sentences/s), each also on the CPU of the same
#   machine for the ratio.
# Needs `make run` first (corpus, evaluation sets, tokenizers, trained NMT models)
# and a CUDA build of torch in .venv (README, "GPU users"). Writes JSON under
# benchmarks/results/gpu/ and prints where. Usage: bash benchmarks/gpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=benchmarks/results/gpu

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "no CUDA device visible to torch ($("$PY" -c 'import torch; print(torch.__version__)')): nothing to benchmark" >&2
    exit 2
fi
mkdir -p "$OUT"
"$PY" - > "$OUT/device.json" <<'PY'
import json, platform, torch
p = torch.cuda.get_device_properties(0)
print(json.dumps({"gpu": p.name, "memory_gb": round(p.total_memory / 2**30, 1),
                  "capability": f"{p.major}.{p.minor}", "torch": torch.__version__,
                  "cuda": torch.version.cuda, "count": torch.cuda.device_count(),
                  "python": platform.python_version()}, indent=2))
PY
cat "$OUT/device.json"

# A text8-sized corpus (17M tokens): the training text itself when it is that large
# (the full profile's text8), else the default training text repeated to that size
# (a speed measurement only: a repeated corpus's quality numbers are not text8's).
CORPUS=$("$PY" - data/subsampled/text/train.txt "$OUT/text8-sized.txt" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src, encoding="utf-8").read()
words = len(text.split())
if words >= 15_000_000:
    print(src)
else:
    with open(dst, "w", encoding="utf-8") as f:
        n = 0
        while n < 17_005_207:
            f.write(text)
            n += words
    print(f"{dst}: {n:,} tokens ({src} x {n // words})", file=sys.stderr)
    print(dst)
PY
)

"$PY" benchmarks/embeddings.py --corpus "$CORPUS" --methods sgns --seeds 1 \
    --device cuda --out "$OUT/embeddings-cuda.json"
"$PY" benchmarks/embeddings.py --corpus "$CORPUS" --methods sgns gensim --seeds 1 \
    --device cpu --out "$OUT/embeddings-cpu.json"
# training in strict fp32, in bf16 autocast + TF32 (accel.precision: auto on CUDA),
# and bf16 with torch.compile; the CPU of the same machine in fp32
"$PY" benchmarks/lm.py --orders --device cuda --precision fp32 --out "$OUT/lm-cuda-fp32.json"
"$PY" benchmarks/lm.py --orders --device cuda --precision bf16 --out "$OUT/lm-cuda-bf16.json"
"$PY" benchmarks/lm.py --orders --device cuda --precision bf16 --compile \
    --families lstm transformer --out "$OUT/lm-cuda-bf16-compiled.json"
"$PY" benchmarks/lm.py --device cpu --out "$OUT/lm-cpu.json"
"$PY" benchmarks/nmt.py --device cuda --precision fp32 --out "$OUT/nmt-cuda-fp32.json"
"$PY" benchmarks/nmt.py --device cuda --precision bf16 --out "$OUT/nmt-cuda-bf16.json"
"$PY" benchmarks/nmt.py --device cpu --out "$OUT/nmt-cpu.json"
echo "GPU benchmark results: $OUT/"
