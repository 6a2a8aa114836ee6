#!/usr/bin/env python3
"""Runs a fuzz corpus made by make_cases.py and judges every case.

    python3 scripts/fuzz/run_cases.py CORPUS [--bin target/debug] [--timeout 60] [--mem-mb 4000]
        [--report out.tsv] [--only GLOB] [--known scripts/fuzz/known_failures.txt] [--keep DIR] [-v]

Each case runs in a fresh scratch folder (a copy of the case's in/ plus an empty out/), as its
own process group, under an address-space cap (RLIMIT_AS) and a wall-clock limit. A case FAILS on:

  panic          exit code 101 or 'panicked' in stderr
  signal         death by a signal (abort, OOM kill, segfault, ...)
  timeout        still running after --timeout seconds (killed)
  input_changed  an input file's sha256 changed, or it disappeared (allowed only where the case
                 says the tool rewrites it by design, e.g. --resume)
  output_after_error  a declared final output exists (new or changed) after a non-zero exit
  leftover_temp  a temporary file (*.tmp*) is left in an output folder (after any exit)
  leftover_file  another new file is left after a non-zero exit (not one the case allows)
  no_file_named  a non-zero exit whose stderr names no input/output file (a bad-flag case may
                 name the flag instead)
  wrong_output   a neutral change (CRLF, rewrapped FASTA, same data recompressed, columns
                 reordered, ...) was accepted but the outputs differ from the unmodified run's
  bad_output     a zero exit that wrote a .safetensors output Python cannot parse

A zero exit is "accepted" (listed in the report: a person judges whether the output is right; the
report flags accepted cases whose damage should have been refused, and NaN/inf in text outputs).
Failures matching scripts/fuzz/known_failures.txt are reported as known and do not fail the run.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PH = re.compile(r"\{(in|out):([^}]+)\}")
TOOLS = ["luminome-tokenize", "luminome-mask-pairs", "luminome-regions", "luminome-train",
         "luminome-predict", "luminome-importance"]
FAIL_KINDS = ["panic", "signal", "timeout", "input_changed", "output_after_error", "leftover_temp",
              "leftover_file", "no_file_named", "wrong_output", "bad_output"]
TEMP_RE = re.compile(r"\.tmp(\.|$)|\.tmp[A-Za-z0-9]")


def find_bins(bin_dir: str | None) -> dict[str, str]:
    out = {}
    for t in TOOLS:
        if bin_dir:
            p = Path(bin_dir) / t
        else:
            p = REPO / "target/debug" / t
            if not p.is_file():
                w = shutil.which(t)
                p = Path(w) if w else p
        if not p.is_file():
            raise SystemExit(f"fuzz: {t} not found ({p}); build it or give --bin")
        out[t] = str(p.resolve())
    return out


def resolve(argv):
    return [PH.sub(lambda m: f"{m.group(1)}/{m.group(2)}", a) for a in argv]


def sha(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def tree(root: Path) -> dict[str, str]:
    """Relative path -> 'dir', 'link', or the file's sha256, for everything under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        for n in dirnames:
            out[str((d / n).relative_to(root))] = "link" if (d / n).is_symlink() else "dir"
        for n in filenames:
            p = d / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link"
            else:
                try:
                    out[rel] = sha(p)
                except OSError:
                    out[rel] = "unreadable"
    return out


def limits(mem_bytes: int):
    def f():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return f


def prepare(case_dir: Path, case: dict, scratch: Path):
    shutil.copytree(case_dir / "in", scratch / "in", symlinks=True)
    (scratch / "out").mkdir()
    st = case.get("setup") or {}
    for d in st.get("mkdirs", []):
        (scratch / d).mkdir(parents=True, exist_ok=True)
    for f, text in st.get("files", {}).items():
        (scratch / f).write_text(text)
    for src, dst in st.get("moves", {}).items():
        (scratch / dst).parent.mkdir(parents=True, exist_ok=True)
        os.rename(scratch / src, scratch / dst)
    for link, target in st.get("hardlinks", {}).items():
        os.link(scratch / target, scratch / link)
    for link, target in st.get("symlinks", {}).items():
        os.symlink(target, scratch / link)


def execute(bins, case, scratch: Path, timeout: float, mem_mb: int):
    argv = resolve(case["argv"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUST_LOG")}
    env["RUST_BACKTRACE"] = "0"
    t0 = time.monotonic()
    p = subprocess.Popen(argv, executable=bins[case["tool"]], cwd=scratch, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=limits(mem_mb << 20), env=env)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    return p.returncode, timed_out, out, err.decode("utf-8", "replace"), time.monotonic() - t0


# ------------------------------------------------------------------------------ output comparison

def normalise(p: Path):
    """Comparable content of an output: tensors without metadata, gz decompressed, npz members."""
    if p.is_dir():
        return "dir"
    raw = p.read_bytes()
    name = p.name
    if name.endswith(".safetensors"):
        try:
            n = struct.unpack_from("<Q", raw)[0]
            h = json.loads(raw[8:8 + n])
            h.pop("__metadata__", None)
            data = raw[8 + n:]
            return {k: (v["dtype"], v["shape"], hashlib.sha256(data[v["data_offsets"][0]:v["data_offsets"][1]]).hexdigest())
                    for k, v in sorted(h.items())}
        except Exception as e:  # noqa: BLE001
            return f"unparseable: {e}"
    if name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except Exception:  # noqa: BLE001
            pass
        return _drop_command_lines(raw)
    if name.endswith(".npz"):
        try:
            with zipfile.ZipFile(p) as z:
                return {i: hashlib.sha256(z.read(i)).hexdigest() for i in sorted(z.namelist())}
        except Exception as e:  # noqa: BLE001
            return f"unparseable: {e}"
    return _drop_command_lines(raw)


def _drop_command_lines(raw: bytes):
    # VCF/bedGraph headers may record the command line and the tool version: not data.
    return hashlib.sha256(b"".join(l for l in raw.splitlines(keepends=True)
                                   if not l.startswith((b"##luminome", b"##source", b"##command",
                                                        b"#luminome", b"track ")))).hexdigest()


def safetensors_ok(p: Path) -> str | None:
    try:
        raw = p.read_bytes()
        n = struct.unpack_from("<Q", raw)[0]
        h = json.loads(raw[8:8 + n])
        end = 0
        for k, v in h.items():
            if k == "__metadata__":
                continue
            end = max(end, v["data_offsets"][1])
        if 8 + n + end != len(raw):
            return f"data size {len(raw) - 8 - n} != declared {end}"
    except Exception as e:  # noqa: BLE001
        return str(e)
    return None


NAN_RE = re.compile(rb"(?i)(?<![A-Za-z])(nan|-?inf)(?![A-Za-z])")


class Runner:
    def __init__(self, corpus: Path, bins, timeout, mem_mb, work: Path, verbose: bool):
        self.corpus, self.bins, self.timeout, self.mem_mb = corpus, bins, timeout, mem_mb
        self.work, self.verbose = work, verbose
        self.refs: dict[str, dict] = {}

    def reference(self, case) -> dict | None:
        """Outputs of the unmodified template (inputs from _base), normalised; cached."""
        key = case["template"]
        if key in self.refs:
            return self.refs[key]
        scratch = Path(tempfile.mkdtemp(prefix="ref.", dir=self.work))
        try:
            (scratch / "in").mkdir()
            (scratch / "out").mkdir()
            for n in case["inputs"]:
                (scratch / "in" / n).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(self.corpus / "_base" / n, scratch / "in" / n)
            rc, to, _, err, _ = execute(self.bins, case, scratch, self.timeout, self.mem_mb)
            if rc != 0:
                print(f"fuzz: the unmodified {key} failed (exit {rc}): {err[-500:]}", file=sys.stderr)
                self.refs[key] = None
            else:
                self.refs[key] = {o: normalise(scratch / o) for o in case["outputs"] if (scratch / o).exists()}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return self.refs[key]

    def oracle(self, case, scratch: Path) -> str | None:
        """Runs the case again without the files in oracle_remove (a .fai: the FASTA is then
        indexed in memory); an accepted run must give the same outputs."""
        o = Path(tempfile.mkdtemp(prefix="oracle.", dir=self.work))
        try:
            prepare(self.case_dir, case, o)
            for rel in case["oracle_remove"]:
                (o / rel).unlink(missing_ok=True)
            rc, _, _, err, _ = execute(self.bins, case, o, self.timeout, self.mem_mb)
            if rc != 0:
                return (f"accepted with {', '.join(case['oracle_remove'])}, but without it the same input "
                        f"is refused (exit {rc}: {excerpt(err, 160)})")
            a = {x: normalise(scratch / x) for x in case["outputs"] if (scratch / x).exists()}
            b = {x: normalise(o / x) for x in case["outputs"] if (o / x).exists()}
            diff = sorted(x for x in set(a) | set(b) if a.get(x) != b.get(x))
            if diff:
                return (f"outputs differ from the run without {', '.join(case['oracle_remove'])}: "
                        + ", ".join(diff))
        finally:
            shutil.rmtree(o, ignore_errors=True)
        return None

    def run_case(self, case_dir: Path, keep: Path | None = None) -> dict:
        self.case_dir = case_dir
        case = json.loads((case_dir / "case.json").read_text())
        scratch = Path(tempfile.mkdtemp(prefix=case["id"][:40] + ".", dir=self.work))
        try:
            prepare(case_dir, case, scratch)
            before = tree(scratch)
            rc, timed_out, _, err, secs = execute(self.bins, case, scratch, self.timeout, self.mem_mb)
            after = tree(scratch)
            res = self.judge(case, scratch, before, after, rc, timed_out, err)
            res["seconds"] = round(secs, 2)
        finally:
            if keep is not None:
                dest = keep / case["id"]
                if dest.exists():
                    shutil.rmtree(dest)
                shutil.move(str(scratch), dest)
                print(f"fuzz: kept {dest}", file=sys.stderr)
            else:
                shutil.rmtree(scratch, ignore_errors=True)
        res["case"] = case
        res["stderr"] = err
        return res

    def judge(self, case, scratch, before, after, rc, timed_out, err) -> dict:
        fails, notes = [], []
        if rc == 101 or "panicked" in err:
            fails.append("panic")
        if timed_out:
            fails.append("timeout")
        elif rc is not None and rc < 0:
            fails.append("signal")
            notes.append(f"killed by {signal.Signals(-rc).name}")
        # inputs: every file under in/ that existed before must be unchanged
        may = case.get("may_change") or []
        changed = []
        for rel, h in before.items():
            if not rel.startswith("in/") or h in ("dir",):
                continue
            if any(fnmatch.fnmatch(rel, g) for g in may):
                continue
            if after.get(rel) != h:
                changed.append(rel + (" (removed)" if rel not in after else ""))
        if changed:
            fails.append("input_changed")
            notes.append("changed: " + ", ".join(changed))
        new = sorted(set(after) - set(before))
        modified = sorted(r for r in after if r in before and before[r] != after[r])
        temps = [r for r in new if TEMP_RE.search(Path(r).name)]
        # a process killed by a signal cannot clean up: its temporaries are not a separate failure
        if temps and rc is not None and rc >= 0 and not timed_out:
            fails.append("leftover_temp")
            notes.append("temporary files: " + ", ".join(temps[:5]))
        died = timed_out or (rc is not None and rc < 0)
        if rc is not None and rc > 0:
            outs = [o for o in case["outputs"] if o in new or o in modified]
            if outs:
                fails.append("output_after_error")
                notes.append("outputs present: " + ", ".join(outs))
            allowed = case.get("allowed_leftovers") or []
            stray = [r for r in new if r not in temps and r not in outs
                     and not any(fnmatch.fnmatch(r, g) for g in allowed)
                     and not any(o.startswith(r + "/") for o in outs)]
            if stray:
                fails.append("leftover_file")
                notes.append("left behind: " + ", ".join(stray[:6]))
            names = set()
            for rel in list(before) + case["outputs"]:
                if rel.startswith(("in/", "out/")) and rel not in ("in", "out"):
                    names.add(Path(rel).name)
                    names.add(rel)
            names.add(case.get("culprit") or "")
            names.discard("")
            flag = case.get("flag")
            named = any(n in err for n in names)
            if not named and flag:
                # the flag as typed, or its name as the message words it (d_model, max length)
                low = err.lower()
                bare = flag.lstrip("-").lower()
                named = any(v in low for v in (flag.lower(), bare, bare.replace("-", "_"),
                                                bare.replace("-", " ")))
            if not named:
                fails.append("no_file_named")
        status = "refused" if (rc is not None and rc > 0) else "accepted" if rc == 0 else "died"
        if rc == 0:
            for o in case["outputs"]:
                p = scratch / o
                if p.is_file() and p.name.endswith(".safetensors"):
                    why = safetensors_ok(p)
                    if why:
                        fails.append("bad_output")
                        notes.append(f"{o}: {why}")
                elif p.is_file() and p.stat().st_size < (8 << 20) and not p.name.endswith((".gz", ".npz")):
                    if NAN_RE.search(p.read_bytes()):
                        notes.append(f"nan/inf in {o}")
            if case.get("expect") == "equal" and case.get("compare_outputs", True):
                ref = self.reference(case)
                if ref is not None:
                    got = {o: normalise(scratch / o) for o in case["outputs"] if (scratch / o).exists()}
                    diff = sorted(o for o in set(ref) | set(got) if ref.get(o) != got.get(o))
                    if diff:
                        fails.append("wrong_output")
                        notes.append("differs from the unmodified run: " + ", ".join(diff))
            if case.get("oracle_remove"):
                why = self.oracle(case, scratch)
                if why:
                    fails.append("wrong_output")
                    notes.append(why)
            if case.get("expect") == "refuse":
                notes.append("accepted input that should be refused")
        if died:
            status = "died"
        return {"rc": rc, "fails": fails, "notes": notes, "status": status}


def excerpt(err: str, n: int = 400) -> str:
    lines = [l for l in err.splitlines() if l.strip()]
    # the panic message or the error line is what a reader needs
    for key in ("panicked", "error", "Error"):
        hits = [i for i, l in enumerate(lines) if key in l]
        if hits:
            i = hits[0]
            return " | ".join(lines[i:i + 3])[:n]
    return " | ".join(lines[-3:])[:n]


def load_known(path: Path):
    out = []
    if not path or not path.exists():
        return out
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 2:
            continue
        pat, kinds = parts[0], parts[1]
        out.append({"pattern": pat, "kinds": None if kinds == "*" else set(kinds.split(",")),
                    "reason": parts[2] if len(parts) > 2 else "", "matched": 0, "passed": 0})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--bin", help="folder with the luminome-* binaries [target/debug, else PATH]")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--mem-mb", type=int, default=4000)
    ap.add_argument("--report", help="TSV report (one row per case)")
    ap.add_argument("--only", action="append", help="run only cases whose id matches this glob (repeatable)")
    ap.add_argument("--known", default=str(HERE / "known_failures.txt"),
                    help="allow-list of known failures [scripts/fuzz/known_failures.txt]; '' for none")
    ap.add_argument("--keep", help="keep each case's scratch folder under this folder")
    ap.add_argument("--work", help="folder for scratch folders [a temporary folder]")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's stderr")
    a = ap.parse_args(argv)

    corpus = Path(a.corpus)
    if not (corpus / "_base").is_dir():
        raise SystemExit(f"fuzz: {corpus} is not a corpus made by make_cases.py (no _base/)")
    bins = find_bins(a.bin)
    dirs = sorted(d for d in corpus.iterdir() if (d / "case.json").is_file())
    if a.only:
        dirs = [d for d in dirs if any(fnmatch.fnmatch(d.name, g) for g in a.only)]
    known = load_known(Path(a.known)) if a.known else []
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="luminome-fuzz."))
    work.mkdir(parents=True, exist_ok=True)
    keep = Path(a.keep) if a.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    runner = Runner(corpus, bins, a.timeout, a.mem_mb, work, a.verbose)
    rows = []
    t0 = time.monotonic()
    try:
        for i, d in enumerate(dirs, 1):
            r = runner.run_case(d, keep)
            c = r["case"]
            r["known"] = []
            if r["fails"]:
                for k in known:
                    if fnmatch.fnmatch(c["id"], k["pattern"]) and (k["kinds"] is None or set(r["fails"]) <= k["kinds"]):
                        k["matched"] += 1
                        r["known"] = [k["pattern"]]
                        break
            else:
                for k in known:
                    if fnmatch.fnmatch(c["id"], k["pattern"]):
                        k["passed"] += 1
            rows.append(r)
            mark = "FAIL" if r["fails"] and not r["known"] else "known" if r["fails"] else r["status"]
            if a.verbose or (r["fails"] and not r["known"]):
                print(f"[{i}/{len(dirs)}] {mark:8} {c['id']} rc={r['rc']} {','.join(r['fails'])} "
                      f"{'; '.join(r['notes'])}", file=sys.stderr)
                if r["fails"] or a.verbose:
                    print("    " + excerpt(r["stderr"], 600), file=sys.stderr)
                if a.verbose:
                    print("    $ " + c.get("command", ""), file=sys.stderr)
            elif i % 50 == 0:
                print(f"fuzz: {i}/{len(dirs)} cases, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)

    # ------------------------------------------------------------------ summary and report
    n = len(rows)
    refused = sum(1 for r in rows if r["status"] == "refused" and not r["fails"])
    accepted = [r for r in rows if r["status"] == "accepted"]
    failing = [r for r in rows if r["fails"]]
    new_fail = [r for r in failing if not r["known"]]
    by_kind = {k: sum(1 for r in failing if k in r["fails"]) for k in FAIL_KINDS}
    by_tool = {}
    for r in rows:
        t = r["case"]["tool"].replace("luminome-", "")
        s = by_tool.setdefault(t, {"cases": 0, "refused": 0, "accepted": 0, "failed": 0})
        s["cases"] += 1
        s["failed" if r["fails"] else r["status"] if r["status"] in ("refused", "accepted") else "failed"] += 1
    secs = time.monotonic() - t0
    print(f"\nfuzz: {n} cases in {secs:.0f} s: {refused} refused cleanly, {len(accepted)} accepted "
          f"({sum(1 for r in accepted if r['case'].get('expect') == 'refuse')} of them damage that should be refused), "
          f"{len(failing)} failing ({len(failing) - len(new_fail)} known, {len(new_fail)} new)")
    print("fuzz: failures by kind: " + ", ".join(f"{k} {v}" for k, v in by_kind.items() if v) if failing else
          "fuzz: no failures")
    print("fuzz: by tool: " + "; ".join(f"{t} {s['cases']} cases ({s['refused']} refused, {s['accepted']} accepted, "
                                       f"{s['failed']} failing)" for t, s in sorted(by_tool.items())))
    stale = [k for k in known if k["passed"] and not k["matched"]]
    for k in stale:
        print(f"fuzz: known failure {k['pattern']!r} matched {k['passed']} passing case(s) and no failing one: "
              "fixed? remove it from known_failures.txt", file=sys.stderr)
    if a.report:
        with open(a.report, "w") as f:
            f.write("id\ttool\ttemplate\tformat\texpect\tstatus\trc\tseconds\tfailures\tknown\tnotes\tcase_notes\tstderr\tcommand\n")
            for r in rows:
                c = r["case"]
                cells = [c["id"], c["tool"], c["template"], c.get("format", ""), c.get("expect", ""),
                         "FAIL" if r["fails"] else r["status"], str(r["rc"]), str(r["seconds"]),
                         ",".join(r["fails"]), ",".join(r["known"]), "; ".join(r["notes"]), c.get("notes", ""),
                         excerpt(r["stderr"]), c.get("command", "")]
                f.write("\t".join(x.replace("\t", " ").replace("\n", " ") for x in cells) + "\n")
        print(f"fuzz: report in {a.report}")
    return 1 if new_fail else 0


if __name__ == "__main__":
    sys.exit(main())
