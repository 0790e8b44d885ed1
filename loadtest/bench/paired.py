"""Paired ratios for the bench scripts (cpu-per-query.sh, cold-code.sh).

Rows measured in one round ran seconds apart, so a noisy minute moves
both sides of a ratio; each round's own ratio, then their median and
range, resolve less noise than the ratio of the two medians alone.
Imported by the scripts' inline Python (PYTHONPATH=loadtest/bench).
"""
import statistics


def paired(a, b):
    """Each round's a/b, sorted: `a` and `b` map a round to a figure;
    rounds missing from either side, or where b is 0, are left out."""
    return sorted(a[k] / b[k] for k in a if k in b and b[k])


def summary(a, b):
    """`median M, LO-HI over N rounds` of paired(a, b), or '' if none."""
    p = paired(a, b)
    if not p:
        return ""
    return f"median {statistics.median(p):.3f}, {p[0]:.2f}-{p[-1]:.2f} over {len(p)} rounds"
