#!/usr/bin/env bash
# Record the multi-GPU jobs (NCCL) that tests/test_collectives.py reads, on a host with 4 GPUs, and run tcinspect
# on them: from a checkout's root, `OUT=/some/dir bash tests/data/torch_trace/record_multigpu.sh`.
#
# Each sample runs on 2 and on 4 GPUs under record_collectives.py (torch's own records beside the logs), into
# tests/data/torch_trace/torch-<version>-cuda/<sample>-nproc<N>/; the 2-GPU jobs run two at a time, each on a
# pair of GPUs. Then tcinspect reads each recorded directory (trace, check), and runs two samples itself
# (trace --nproc 4, check --nproc 2). What it printed lands in $OUT; the recorded directories in
# $OUT/recorded.tar.gz. Wheels for packages the host lacks (msgspec, orjson) are installed from .whl/ if there.
set -u
OUT=${OUT:?set OUT to a directory for the results}
# NVLink multicast stays off (a program using it can take the host's shared GPUs out of service)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/src
PY=${PY:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then $PY -m pip install --quiet --no-index --no-deps .whl/*.whl; fi
nvidia-smi -L
$PY -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "gpus", torch.cuda.device_count())'
version=$($PY -c 'import torch; print(torch.__version__.split("+")[0] + ("-cuda" if torch.cuda.is_available() else ""))')
DEST=tests/data/torch_trace/torch-$version
SAMPLES="tp_mlp collectives_ranks fsdp2_mlp ddp_mlp"
mkdir -p "$OUT/logs"

rec() {  # rec GPUS SAMPLE NPROC
    local start=$SECONDS
    CUDA_VISIBLE_DEVICES=$1 $PY tests/data/torch_trace/record_collectives.py "sample_models/$2.py" --nproc "$3" \
        >"$OUT/logs/record-$2-$3.txt" 2>&1
    echo "recorded $2 on $3 GPUs ($1): exit $? in $((SECONDS - start)) s"
}

set -- $SAMPLES
rec 0,1 "$1" 2 & rec 2,3 "$2" 2 & wait
rec 0,1 "$3" 2 & rec 2,3 "$4" 2 & wait
for s in $SAMPLES; do rec 0,1,2,3 "$s" 4; done

{
    for d in "$DEST"/*-nproc*; do
        echo "\$ tcinspect trace $d --stage summary,collectives"
        $PY -m tcinspect trace "$d" --stage summary,collectives; echo "exit $?"
        echo "\$ tcinspect check $d"
        $PY -m tcinspect check "$d"; echo "exit $?"
    done
} >"$OUT/readers.txt" 2>&1
echo "readers done"
{
    echo "\$ tcinspect trace sample_models/tp_mlp.py --nproc 4 --stage summary,collectives"
    $PY -m tcinspect trace sample_models/tp_mlp.py --nproc 4 --stage summary,collectives; echo "exit $?"
    echo "\$ tcinspect check sample_models/collectives_ranks.py --nproc 2"
    $PY -m tcinspect check sample_models/collectives_ranks.py --nproc 2; echo "exit $?"
} >"$OUT/live.txt" 2>&1
echo "live done"
tar czf "$OUT/recorded.tar.gz" "$DEST"/*-nproc*
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
grep -h "exit\|^\\$" "$OUT/readers.txt" "$OUT/live.txt" | head -40
ls -la "$OUT"
