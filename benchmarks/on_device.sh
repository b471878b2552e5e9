#!/usr/bin/env bash
# The GPU checks of issue 32 as one call of a lent GPU machine that has no package registry
# (BENCHMARKS.md, "On a GPU"): installs the wheels carried beside the tree, runs
# benchmarks/gpu_check.py (ending by itself inside the call's limit), then, while time is
# left, the checks named in AFTER (default: benchmarks/gpu_train_check.py), and copies their JSON into $OUT, which the call
# brings back even when it is cut short.
#
#   bash benchmarks/on_device.sh SECONDS [gpu_check.py flags...]   # e.g. 540 --trl
#   bash benchmarks/on_device.sh install                           # the wheels only
#   AFTER="memory train" bash benchmarks/on_device.sh 540 --decoding compiled   # then these checks
#   OUT=/tmp/out PYTHON=.venv/bin/python bash benchmarks/on_device.sh 300 --smoke   # on the CPU
#
# Wheels: every *.whl in the folders .whl*/ at the tree's root, installed without their
# dependencies into build/site (git ignores build/, so a warm machine keeps it between
# calls: carry .whl in one call and .whl-arrow, pyarrow's 55 MB wheel, in the one before, to
# stay under the 64 MiB a call carries). Set DELIBERATION_ENV_SOURCE_COMMIT to the commit
# the copied tree is: it has no git.
set -u
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
out=${OUT:-benchmarks/results}
site=$PWD/build/site
export PYTHONPATH=$site:$PWD${PYTHONPATH:+:$PYTHONPATH}

shopt -s nullglob
wheels=(.whl*/*.whl)
if ((${#wheels[@]})); then
    mkdir -p "$site"
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "${wheels[@]}" 2>&1 | tail -3 || true
fi
[[ ${1:-} == install ]] && exit 0
seconds=${1:?"usage: on_device.sh SECONDS [gpu_check flags] | install"}
shift

"$python" - <<'EOF'
import importlib
import torch
missing = []
for module in ("transformers", "peft", "tyro", "datasets", "trl"):
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001
        missing.append(f"{module} ({type(error).__name__}: {str(error)[:120]})")
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
print(f"torch {torch.__version__}, {gpu}; not importable: {', '.join(missing) or 'none'}", flush=True)
# what torch.compile's Triton kernels need (the compiled step): triton, a C compiler, Python's headers
import shutil, sysconfig
from pathlib import Path
try:
    import triton
    triton_version = triton.__version__
except Exception as error:  # noqa: BLE001
    triton_version = f"missing ({type(error).__name__})"
compiler = next(filter(None, map(shutil.which, ("cc", "gcc", "clang"))), "none")
headers = Path(sysconfig.get_paths()["include"], "Python.h").exists()
print(f"triton {triton_version}; C compiler: {compiler}; Python.h: {headers}", flush=True)
EOF

started=$SECONDS
stamp=$(mktemp)
# the check starts no phase past the update's after 60% of the call, and is stopped 45 s
# before its end at the latest: the JSON it wrote after each phase stays
timeout -k 10 -s INT $((seconds - 45)) "$python" benchmarks/gpu_check.py --budget-s $((seconds * 6 / 10)) "$@"
echo "gpu_check.py: exit $? after $((SECONDS - started)) s"
smoke=()
[[ " $* " == *" --smoke "* ]] && smoke=(--smoke)
# then the checks named in AFTER, in its order, each while enough of the call is left:
# train (the learner under torchrun and resumed), memory (the MAGRPO paper's scale: two
# agents of Qwen2.5-3B's shape, 4 prompts x G = 8), micro64 (the update's loss pass in
# micro-batches of 64 sequences, not 32), profile (benchmarks/gpu_profile.py: where a
# decoding step and a loss micro-batch spend their time), determinism (two bfloat16 runs of
# one seed under --full-determinism --cast-lm-head-to-fp32 --rollout tree: bit-identical?)
for check in ${AFTER-train}; do
    left=$((seconds - (SECONDS - started)))
    if ((left <= 150)); then
        echo "$check: skipped ($left s left)"
        continue
    fi
    case $check in
    train) timeout -k 10 -s INT $((left - 30)) "$python" benchmarks/gpu_train_check.py "${smoke[@]}" ;;
    memory) timeout -k 10 -s INT $((left - 30)) "$python" benchmarks/gpu_check.py "${smoke[@]}" \
        --shape qwen2.5-3b --prompts 4 --repeats 1 --no-compiled --budget-s 1 ;;
    micro64) timeout -k 10 -s INT $((left - 30)) "$python" benchmarks/gpu_check.py "${smoke[@]}" \
        --micro-batch-size 64 --repeats 1 --no-compiled --budget-s 1 ;;
    profile) timeout -k 10 -s INT $((left - 30)) "$python" benchmarks/gpu_profile.py "${smoke[@]}" ;;
    determinism) timeout -k 10 -s INT $((left - 30)) "$python" benchmarks/gpu_train_check.py "${smoke[@]}" \
        --checks determinism ;;
    *) echo "AFTER: unknown check $check (train, memory, micro64, profile, determinism)" ;;
    esac
    echo "$check: exit $?"
done
mkdir -p "$out"
if [[ $out != benchmarks/results ]]; then  # what this call wrote, not the files of the commit
    find benchmarks/results -maxdepth 1 -name 'gpu_*.json' -newer "$stamp" -exec cp {} "$out/" \;
fi
ls "$out"
