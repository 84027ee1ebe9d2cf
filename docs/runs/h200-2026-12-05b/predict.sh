# Predicts a family's grids from its call's one-worker calibration alone
# (round h200-2026-12-05b, README.md "Checks"): runs/h200-2026-12-05's
# predict.sh (`--fit-only` on designs/, probe/, ballast/, probe-ballast/
# without race/, newest_first and later_first the base's) with 64 seeds, as
# `bench contention calibrate` suggests, and without reading the call's draws.
# usage: predict.sh RUN OUT   (FAMS, default f26; CUZK, default build/cuzk)
set -eu
FAMS=${FAMS:-f26} SEEDS=${SEEDS:-64} COMPARE=0 bash docs/runs/h200-2026-12-05/predict.sh "$@"
