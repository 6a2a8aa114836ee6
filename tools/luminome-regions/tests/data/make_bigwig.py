#!/usr/bin/env python3
"""Writes acc.K562.slice.bw: test-data/chr22_slice/acc.K562.bedgraph as a bigWig (pyBigWig), so the
bigWig reader can be tested against the bedGraph it came from. Run from this folder."""
import pyBigWig

rows = [l.split() for l in open("../../../../test-data/chr22_slice/acc.K562.bedgraph")]
bw = pyBigWig.open("acc.K562.slice.bw", "w")
bw.addHeader([("chr22_slice", 200000)])
bw.addEntries([r[0] for r in rows], [int(r[1]) for r in rows], ends=[int(r[2]) for r in rows],
              values=[float(r[3]) for r in rows])
bw.close()
