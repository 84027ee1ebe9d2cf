#!/usr/bin/env python3
"""Writes a copy of a profile with one field set: setfield.py PROFILE OUT FIELD VALUE,
FIELD dotted (device.malloc_free_wait_ms_per_gib, host.handoff.later_first), VALUE
a JSON number or true/false."""
import json
import sys

src, out, field, value = sys.argv[1:5]
p = json.load(open(src))
*path, last = field.split(".")
node = p
for k in path:
    node = node.setdefault(k, {})
node[last] = json.loads(value)
json.dump(p, open(out, "w"), indent=2)
