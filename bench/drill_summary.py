"""Print one table row from `dbpilot drill --json` results: drill_summary.py LABEL FILE...

With several files (one drill each, e.g. one round each), their rounds are
summarized together: failed rounds, write-unavailability quantiles
(nearest rank, as the drill computes them), detection p50, lost and
acknowledged writes."""
import json
import math
import sys


def quantile(v, q):
    if not v:
        return 0.0
    s = sorted(v)
    return s[max(0, math.ceil(q * len(s)) - 1)]


label, paths = sys.argv[1], sys.argv[2:]
rounds = []
for path in paths:
    try:
        with open(path) as f:
            rounds += json.load(f)["rounds"]
    except (OSError, ValueError, KeyError):
        rounds.append({"error": "no result in " + path, "acked": 0, "lost_acked": 0})
ok = [r for r in rounds if not r.get("error")]
un = [r["write_unavailable_s"] for r in ok]
det = [r["detection_s"] for r in ok]
lost = sum(r["lost_acked"] for r in rounds)
acked = sum(r["acked"] for r in rounds)
print(f"{label:<28} {len(rounds):>6} {len(rounds) - len(ok):>6} {quantile(un, 0.5):>8.3f} {quantile(un, 0.95):>8.3f} "
      f"{quantile(un, 1):>8.3f} {quantile(det, 0.5):>9.3f} {lost:>10} {acked:>8}")
