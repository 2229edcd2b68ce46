#!/usr/bin/env bash
# The step check alone on a lent GPU (soaked, the default), with clocks: the
# harness built as run_lease.sh builds it; $OUT gets build.log, smi.csv and
# raw/ (step_measured.csv, step_kernels.csv, step_checks.csv, log.txt).
# usage: run(command="tools/gpu/run_step_soaked.sh", timeout_s=240)
export PATH=$PATH:/usr/local/cuda/bin; set -u
(cmake -S . -B build-gpu -DSTACKSIM_HARNESS_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a && cmake --build build-gpu --target stacksim-calibrate -j16) > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 200 > $OUT/smi.csv 2>/dev/null &
SMI=$!
timeout -k 10 150 build-gpu/stacksim-calibrate --skip kernels,copy,launch,gemm,attention,nccl,fit --raw $OUT/raw; echo "exit $?"
kill $SMI
grep -i "check\|FAIL" $OUT/raw/log.txt | head -20
awk -F, 'NR > 1 { printf "  %-32s %10.3f ms  stable=%s\n", $1, $14 * 1000, $17 }' $OUT/raw/step_measured.csv
grep -i "RmsNormBackward\|SumColumns" $OUT/raw/step_kernels.csv | head -8
