"""Helpers the bench summaries share: TSV rows, a run's wall time and peak memory from its
/usr/bin/time -v log, and mean ± sd over seeds."""
import csv
import re
import statistics


def tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def time_log(path):
    text = open(path).read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return (wall.group(1) if wall else "?", int(rss.group(1)) // 1024 if rss else 0)


def mean_sd(v):
    if not v:
        return "n/a"
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.mean(v):.3f} ± {sd:.3f} (n={len(v)})"
