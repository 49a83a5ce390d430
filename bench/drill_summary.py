"""Print one table row from a `dbpilot drill --json` result: drill_summary.py LABEL FILE."""
import json
import sys

label, path = sys.argv[1], sys.argv[2]
with open(path) as f:
    d = json.load(f)
s = d["summary"]
acked = sum(r["acked"] for r in d["rounds"])
print(f"{label:<28} {s['rounds']:>6} {s['failed']:>6} {s['p50_s']:>8.3f} {s['p95_s']:>8.3f} "
      f"{s['max_s']:>8.3f} {s['detection_p50_s']:>9.3f} {s['lost_acked']:>10} {acked:>8}")
