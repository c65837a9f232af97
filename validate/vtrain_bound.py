#!/usr/bin/env python3
"""How far could any term that depends only on a plan feature take bench_vtrain?

Reads bench_vtrain's table (a file, or standard input) and, for each way of
grouping the rows by a plan feature (model size, tensor-parallel size, ...),
gives every group its own free scale on the predicted times, the one that
minimises the group's mean absolute relative error, and prints the mean over
all rows. This is an in-sample oracle, not a model: it bounds what a
correction keyed on that feature alone could reach, and a scale per group of
rows is fitting per group, which the shipped calibration does not do.

    build/bench/bench_vtrain > vt.txt && python3 validate/vtrain_bound.py vt.txt

For relative errors the best scale s of a group minimises
sum |s p_i / m_i - 1| = sum (p_i / m_i) |s - m_i / p_i|: the weighted median
of the ratios m_i / p_i with weights p_i / m_i.
Exit 2 with a one-line error when the input holds no rows.
"""
import re
import sys

ROW = re.compile(r"\s*(\d+)\s+([\d.]+)B\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)"
                 r"\s+([\d.]+)\s+([\d.]+)\s+[-+][\d.]+\s+\|")


def read_rows(f, name):
    rows = []
    for line in f:
        m = ROW.match(line)
        if not m:
            continue
        ln, model, gpus, mb, tp, dp, pp, meas, pred = m.groups()
        rows.append({"line": int(ln), "model": model + "B", "gpus": int(gpus),
                     "mb": int(mb), "tp": int(tp), "dp": int(dp), "pp": int(pp),
                     "meas": float(meas), "pred": float(pred)})
    if not rows:
        sys.stderr.write("%s: no bench_vtrain rows found (expected its table)\n" % name)
        sys.exit(2)
    return rows


def weighted_median(pairs):
    """pairs: (value, weight); the value where the cumulative weight reaches half."""
    pairs = sorted(pairs)
    half = sum(w for _, w in pairs) / 2
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= half:
            return v
    return pairs[-1][0]


def bounded_mean(rows, key):
    groups = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    total = 0.0
    for g in groups.values():
        s = weighted_median([(r["meas"] / r["pred"], r["pred"] / r["meas"]) for r in g])
        total += sum(abs(s * r["pred"] / r["meas"] - 1) for r in g)
    return 100 * total / len(rows), len(groups)


GROUPINGS = [
    ("none (the predictions as they are)", None),
    ("one scale for all rows", lambda r: 0),
    ("pipeline or not (pp > 1)", lambda r: r["pp"] > 1),
    ("micro-batch size", lambda r: r["mb"]),
    ("model size", lambda r: r["model"]),
    ("tensor-parallel size", lambda r: r["tp"]),
    ("tp < 8 or not", lambda r: r["tp"] < 8),
    ("pipeline size", lambda r: r["pp"]),
    ("model size and tp < 8", lambda r: (r["model"], r["tp"] < 8)),
    ("model size and tensor-parallel size", lambda r: (r["model"], r["tp"])),
]


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        sys.stderr.write(__doc__)
        sys.exit(2 if len(sys.argv) > 2 else 0)
    if len(sys.argv) == 2:
        name = sys.argv[1]
        try:
            with open(name) as f:
                rows = read_rows(f, name)
        except OSError as e:
            sys.stderr.write("%s: %s\n" % (name, e.strerror))
            sys.exit(2)
    else:
        rows = read_rows(sys.stdin, "<stdin>")
    print("# %d rows; mean |err| with a free scale per group (in-sample oracle)" % len(rows))
    print("%-40s %7s %10s" % ("grouped by", "groups", "mean |err|"))
    for label, key in GROUPINGS:
        if key is None:
            mean = 100 * sum(abs(r["pred"] / r["meas"] - 1) for r in rows) / len(rows)
            print("%-40s %7s %9.2f%%" % (label, "-", mean))
        else:
            mean, n = bounded_mean(rows, key)
            print("%-40s %7d %9.2f%%" % (label, n, mean))


if __name__ == "__main__":
    main()
