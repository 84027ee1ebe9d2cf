#!/usr/bin/env bash
# Split-devsync at 3-4 workers on the whole card for f3, f5 and f6 (no draws of them
# were used for later_first), predicted before runs/h200-2026-12-03b r4 drew them:
# each family's committed profile with the base profile's copy_fifo (as
# fifo-recheck) and, where the profile has none (it predates them), the base's
# handoff order; without ("fifo") and with ("later") the base's later_first.
set -eu
CUZK=${CUZK:-build/cuzk}
U=docs/predictions/contention/draws/unseen
L=$(python3 -c "import json; print(json.load(open('docs/predictions/contention/h200-contention-base.json'))['host']['handoff']['later_first'])")
. gpuprove/contention_families.sh
for fam in f3 f5 f6; do
	family "$fam"
	for v in fifo later; do
		python3 -c "
import json
p = json.load(open('docs/predictions/contention/h200-contention-$fam.json'))
base = json.load(open('docs/predictions/contention/h200-contention-base.json'))
p['device']['copy_fifo'] = True
h = p['host'].setdefault('handoff', dict(base['host']['handoff']))
h['later_first'] = $L if '$v' == 'later' else 0
json.dump(p, open('/tmp/unseen-$fam-$v.json', 'w'))"
		"$CUZK" bench contention --backend sim --profile /tmp/unseen-$fam-$v.json --seeds 16 $MEM --vram-limit 140GiB \
			--designs split-devsync --workers 3,4 > $U/sim-$fam-140GiB-$v.txt 2> $U/sim-$fam-140GiB-$v.err
	done
done
