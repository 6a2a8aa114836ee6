#!/usr/bin/env python3
"""Ratios (Luminome / PyTorch) from bench/bistrand/bench.sh part-1 logs: what each results
folder's summarize.py prints (docs/benchmarks.md, "Bi-strand masked LM")."""
import re
import statistics

line = re.compile(r"repeat (\d+) threads (\d) (pytorch|luminome) +(.*)")
def parse(here, name):
    runs = {}
    for text in (here / name).read_text().splitlines():
        m = line.match(text)
        if not m:
            continue
        r, t, side, rest = int(m[1]), int(m[2]), m[3], m[4]
        d = runs.setdefault((r, t), {}).setdefault(side, {})
        if m2 := re.search(r"train_step_ms median ([\d.]+)", rest):
            d["train"] = float(m2[1])
            if m3 := re.search(r"process CPU ([\d.]+)", rest):
                d["train_cpu"] = float(m3[1])
        elif m2 := re.search(r"inference_batch_ms median ([\d.]+)", rest):
            d["inf"] = float(m2[1])
            if m3 := re.search(r"process CPU ([\d.]+)", rest):
                d["inf_cpu"] = float(m3[1])
        elif rest.startswith("process"):
            w, u, s, k = rest.split()[-4:]
            d["wall"], d["cpu"], d["rss"] = float(w), float(u) + float(s), int(k) / 1024
    return runs

def report(here, title, files, default_names, steps1_name):
    """One section of a summary: per-repeat rows of each run in `files` (name -> bench.sh part-1 log
    in `here`), then per thread count the median ratios of the runs in `default_names`, the CPU per
    iteration by difference with the steps=1 log."""
    print(f"# {title}")
    steps1 = parse(here, steps1_name)
    allruns = {k: parse(here, v) for k, v in files.items()}
    for name, runs in allruns.items():
        print(f"## run {name}")
        print("repeat threads | train ms pt / lu = ratio | inference ms pt / lu = ratio | pt step CPU ms train, inf | "
              "process wall s pt / lu | process CPU s pt / lu | RSS MB pt / lu")
        for (r, t), d in sorted(runs.items()):
            p, l = d["pytorch"], d["luminome"]
            print(f"{r} {t} | {p['train']:.0f} / {l['train']:.0f} = {l['train'] / p['train']:.2f} | "
                  f"{p['inf']:.0f} / {l['inf']:.0f} = {l['inf'] / p['inf']:.2f} | {p['train_cpu']:.0f}, {p['inf_cpu']:.0f} | "
                  f"{p['wall']:.1f} / {l['wall']:.1f} | {p['cpu']:.1f} / {l['cpu']:.1f} | {p['rss']:.0f} / {l['rss']:.0f}")
    default = [allruns[n] for n in default_names]
    print(f"## per thread count, runs {', '.join(default_names)}: median [range] of the per-repeat ratios")
    med = statistics.median
    for t in (1, 2):
        ds = [runs[k] for runs in default for k in sorted(runs) if k[1] == t]
        tr = [d["luminome"]["train"] / d["pytorch"]["train"] for d in ds]
        inf = [d["luminome"]["inf"] / d["pytorch"]["inf"] for d in ds]
        print(f"threads {t} ({len(ds)} repeats): train {med(tr):.2f} [{min(tr):.2f}-{max(tr):.2f}]  "
              f"inference {med(inf):.2f} [{min(inf):.2f}-{max(inf):.2f}]  medians of ms: "
              f"train pt {med([d['pytorch']['train'] for d in ds]):.0f} lu {med([d['luminome']['train'] for d in ds]):.0f}; "
              f"inference pt {med([d['pytorch']['inf'] for d in ds]):.0f} lu {med([d['luminome']['inf'] for d in ds]):.0f}; "
              f"pt step CPU (process_time) train {med([d['pytorch']['train_cpu'] for d in ds]):.0f} "
              f"inference {med([d['pytorch']['inf_cpu'] for d in ds]):.0f}")
        # CPU per iteration (one train step + one inference batch), by differencing the whole process's
        # user+sys at steps=10 (12 iterations) and steps=1 (3 iterations): (CPU10 - CPU1) / 9
        c10 = {s: med([d[s]["cpu"] for d in ds]) for s in ("pytorch", "luminome")}
        c1 = {s: med([v[s]["cpu"] for k, v in steps1.items() if k[1] == t]) for s in ("pytorch", "luminome")}
        w10 = {s: med([d[s]["wall"] for d in ds]) for s in ("pytorch", "luminome")}
        per = {s: (c10[s] - c1[s]) / 9 * 1e3 for s in c10}
        print(f"  CPU per train step + inference batch, (CPU10 - CPU1) / 9: pytorch {per['pytorch']:.0f} ms, "
              f"luminome {per['luminome']:.0f} ms: ratio {per['luminome'] / per['pytorch']:.2f}; whole process at "
              f"steps=10: wall s pt {w10['pytorch']:.1f} lu {w10['luminome']:.1f}, CPU s pt {c10['pytorch']:.1f} "
              f"lu {c10['luminome']:.1f} (CPU ratio {c10['luminome'] / c10['pytorch']:.2f})")
    print()


