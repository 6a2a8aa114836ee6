"""Mutators for the fuzz corpus: text, compressed and safetensors files.

Every mutator takes the original bytes and a `random.Random`, and returns `(bytes, note)`; the
note says what was done (it goes into case.json so a person can see the damage without diffing).
Standard library only.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import struct
import zlib

# Numbers that break parsers: not-a-number, infinities, negatives where counts are expected,
# values past f64/u64/i64/u32, and things that only look like numbers.
EXTREMES = [
    "nan", "NaN", "inf", "-inf", "-1", "1e300", "-1e300", "18446744073709551615",
    "18446744073709551616", "9223372036854775807", "-9223372036854775808", "4294967296",
    "0", "1e-320", "", "abc", "0x1F", "1,5",
]

NUM_RE = re.compile(rb"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def join(lines: list[bytes]) -> bytes:
    return b"".join(lines)


def _header_count(data: bytes) -> int:
    """Lines at the top that look like headers/comments (kept out of line-level damage)."""
    n = 0
    for ln in lines_of(data):
        if ln.startswith((b"#", b"track", b"browser", b"##")):
            n += 1
        else:
            break
    return n


def _delim(line: bytes) -> bytes:
    if b"\t" in line:
        return b"\t"
    if b"," in line:
        return b","
    return b" "


def _content_lines(data: bytes, skip_header: bool) -> tuple[list[bytes], list[int]]:
    ls = lines_of(data)
    start = _header_count(data)
    if skip_header and start == 0 and len(ls) > 1:
        start = 1
    idx = [i for i in range(start, len(ls)) if ls[i].strip()]
    return ls, idx


# ---------------------------------------------------------------- generic text mutators

def truncate(data: bytes, rng: random.Random):
    if len(data) < 2:
        return b"", "truncated to 0 bytes"
    cut = rng.randrange(1, len(data))
    return data[:cut], f"truncated at byte {cut} of {len(data)}"


def truncate_midline(data: bytes, rng: random.Random):
    ls = lines_of(data)
    if len(ls) < 2:
        return truncate(data, rng)
    i = rng.randrange(1, len(ls))
    ln = ls[i]
    cut = rng.randrange(1, max(2, len(ln.rstrip(b"\r\n"))))
    return join(ls[:i]) + ln[:cut], f"truncated in the middle of line {i + 1} (kept {cut} bytes of it)"


def byte_flip(data: bytes, rng: random.Random):
    if not data:
        return b"\xff", "one 0xff byte"
    b = bytearray(data)
    n = rng.randint(1, 6)
    where = sorted(rng.randrange(len(b)) for _ in range(n))
    for w in where:
        b[w] ^= rng.randrange(1, 256)
    return bytes(b), f"xor-flipped {n} bytes at offsets {where}"


def char_swap(data: bytes, rng: random.Random):
    """Replace a few bytes with characters that are meaningful to text formats."""
    if not data:
        return b">", "a single '>'"
    b = bytearray(data)
    n = rng.randint(1, 4)
    where = []
    for _ in range(n):
        w = rng.randrange(len(b))
        c = rng.choice(b">@+\t,#-. N\n0:;=\"")
        b[w] = c
        where.append((w, chr(c)))
    return bytes(b), f"replaced bytes {where}"


def field_swap(data: bytes, rng: random.Random):
    ls, idx = _content_lines(data, skip_header=True)
    if not idx:
        return byte_flip(data, rng)
    i = rng.choice(idx)
    line = ls[i]
    eol = line[len(line.rstrip(b"\r\n")):]
    d = _delim(line)
    f = line.rstrip(b"\r\n").split(d)
    if len(f) < 2:
        return join(ls[:i] + [line + line] + ls[i + 1:]), f"line {i + 1} has one field; doubled it"
    a, c = rng.sample(range(len(f)), 2)
    f[a], f[c] = f[c], f[a]
    ls[i] = d.join(f) + eol
    return join(ls), f"swapped fields {a + 1} and {c + 1} of line {i + 1}"


def field_drop(data: bytes, rng: random.Random):
    ls, idx = _content_lines(data, skip_header=True)
    if not idx:
        return byte_flip(data, rng)
    i = rng.choice(idx)
    line = ls[i]
    eol = line[len(line.rstrip(b"\r\n")):]
    d = _delim(line)
    f = line.rstrip(b"\r\n").split(d)
    k = rng.randrange(len(f))
    del f[k]
    ls[i] = d.join(f) + eol
    return join(ls), f"deleted field {k + 1} of line {i + 1}"


def field_add(data: bytes, rng: random.Random):
    ls, idx = _content_lines(data, skip_header=True)
    if not idx:
        return byte_flip(data, rng)
    i = rng.choice(idx)
    line = ls[i]
    eol = line[len(line.rstrip(b"\r\n")):] or b"\n"
    d = _delim(line)
    ls[i] = line.rstrip(b"\r\n") + d + b"extra" + d + b"7" + eol
    return join(ls), f"two extra fields on line {i + 1}"


def delete_lines(data: bytes, rng: random.Random):
    ls = lines_of(data)
    if len(ls) < 2:
        return b"", "deleted the only line"
    n = rng.randint(1, min(3, len(ls) - 1))
    gone = sorted(rng.sample(range(len(ls)), n))
    return join([l for i, l in enumerate(ls) if i not in gone]), f"deleted lines {[g + 1 for g in gone]}"


def delete_first_line(data: bytes, rng: random.Random):
    ls = lines_of(data)
    return join(ls[1:]), "deleted line 1 (header or first record line)"


def duplicate_lines(data: bytes, rng: random.Random):
    ls = lines_of(data)
    if not ls:
        return b"\n\n", "two blank lines"
    n = rng.randint(1, min(3, len(ls)))
    dup = sorted(rng.sample(range(len(ls)), n))
    out = []
    for i, l in enumerate(ls):
        out.append(l)
        if i in dup:
            out.append(l if l.endswith(b"\n") else l + b"\n")
    return join(out), f"duplicated lines {[d + 1 for d in dup]}"


def duplicate_all(data: bytes, rng: random.Random):
    """The content twice (duplicate records/rows/names; a second header in a table)."""
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data + data, "whole content repeated twice"


def crlf(data: bytes, rng: random.Random):
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "CRLF line endings"


def cr_only(data: bytes, rng: random.Random):
    return data.replace(b"\n", b"\r"), "CR-only line endings (old Mac)"


def no_final_newline(data: bytes, rng: random.Random):
    return data.rstrip(b"\r\n"), "no newline at the end"


def blank_lines(data: bytes, rng: random.Random):
    ls = lines_of(data)
    n = rng.randint(1, 3)
    pos = sorted(rng.randrange(len(ls) + 1) for _ in range(n))
    for p in reversed(pos):
        ls.insert(p, rng.choice([b"\n", b"   \n", b"\t\n"]))
    return join(ls), f"blank/whitespace lines inserted before lines {[p + 1 for p in pos]}"


def empty(data: bytes, rng: random.Random):
    return b"", "empty file"


def only_newline(data: bytes, rng: random.Random):
    return b"\n", "a single newline"


def header_only(data: bytes, rng: random.Random):
    ls = lines_of(data)
    return (ls[0] if ls else b""), "only the first line"


def shuffle_lines(data: bytes, rng: random.Random):
    ls, idx = _content_lines(data, skip_header=True)
    if len(idx) < 2:
        return duplicate_lines(data, rng)
    body = [ls[i] for i in idx]
    rng.shuffle(body)
    for i, l in zip(idx, body):
        ls[i] = l if l.endswith(b"\n") else l + b"\n"
    return join(ls), "data lines shuffled (unsorted)"


def extreme_number(data: bytes, rng: random.Random, value: str | None = None):
    ls, idx = _content_lines(data, skip_header=True)
    cand = [(i, m) for i in idx for m in NUM_RE.finditer(ls[i])]
    if not cand:
        return byte_flip(data, rng)
    i, m = rng.choice(cand)
    v = value if value is not None else rng.choice(EXTREMES)
    ls[i] = ls[i][: m.start()] + v.encode() + ls[i][m.end():]
    return join(ls), f"number {m.group().decode()!r} on line {i + 1} replaced by {v!r}"


def every_number(data: bytes, rng: random.Random, value: str | None = None):
    v = value if value is not None else rng.choice(EXTREMES)
    ls, idx = _content_lines(data, skip_header=True)
    i = rng.choice(idx) if idx else 0
    if not ls:
        return v.encode(), f"the file is {v!r}"
    ls[i] = NUM_RE.sub(v.encode(), ls[i])
    return join(ls), f"every number on line {i + 1} replaced by {v!r}"


def nul_bytes(data: bytes, rng: random.Random):
    w = rng.randrange(len(data) + 1)
    return data[:w] + b"\x00" * rng.randint(1, 16) + data[w:], f"NUL bytes inserted at offset {w}"


def invalid_utf8(data: bytes, rng: random.Random):
    w = rng.randrange(len(data) + 1)
    return data[:w] + b"\xff\xfe\xc3(" + data[w:], f"invalid UTF-8 inserted at offset {w}"


def long_line(data: bytes, rng: random.Random):
    ls = lines_of(data)
    p = rng.randrange(len(ls) + 1)
    big = b"A" * (2 << 20)
    if ls and ls[min(p, len(ls) - 1)].count(b"\t") > 0:
        tmpl = ls[min(p, len(ls) - 1)].rstrip(b"\r\n").split(b"\t")
        k = rng.randrange(len(tmpl))
        tmpl[k] = big
        line = b"\t".join(tmpl) + b"\n"
        note = f"a 2 MiB field {k + 1} in a copy of line {min(p, len(ls) - 1) + 1}, inserted at line {p + 1}"
    else:
        line = big + b"\n"
        note = f"a 2 MiB line inserted at line {p + 1}"
    ls.insert(p, line)
    return join(ls), note


def spaces_for_tabs(data: bytes, rng: random.Random):
    return data.replace(b"\t", b" "), "tabs replaced by single spaces"


def binary_garbage(data: bytes, rng: random.Random):
    return bytes(rng.randrange(256) for _ in range(4096)), "4 KiB of random bytes"


def lowercase_all(data: bytes, rng: random.Random):
    return data.lower(), "everything lowercased"


TEXT_MUTATORS = {
    "truncate": truncate,
    "truncate_midline": truncate_midline,
    "byteflip": byte_flip,
    "charswap": char_swap,
    "field_swap": field_swap,
    "field_drop": field_drop,
    "field_add": field_add,
    "del_lines": delete_lines,
    "del_first_line": delete_first_line,
    "dup_lines": duplicate_lines,
    "dup_all": duplicate_all,
    "crlf": crlf,
    "cr_only": cr_only,
    "no_final_newline": no_final_newline,
    "blank_lines": blank_lines,
    "empty": empty,
    "only_newline": only_newline,
    "header_only": header_only,
    "shuffle": shuffle_lines,
    "extreme": extreme_number,
    "extreme_line": every_number,
    "nul": nul_bytes,
    "invalid_utf8": invalid_utf8,
    "long_line": long_line,
    "spaces_for_tabs": spaces_for_tabs,
    "garbage": binary_garbage,
}

# Mutations that keep the content's meaning: the output must equal the unmutated run's.
NEUTRAL = {"crlf", "no_final_newline"}

# Mutations that may leave a valid file (the tool may accept them; judged by a person).
MAYBE_VALID = {
    "truncate", "truncate_midline", "byteflip", "charswap", "del_lines", "dup_lines", "dup_all",
    "blank_lines", "shuffle", "crlf", "cr_only", "no_final_newline", "extreme", "extreme_line",
    "field_add", "field_swap", "long_line", "spaces_for_tabs", "del_first_line", "lowercase",
    "fasta_iupac", "fasta_lower", "fasta_dup_names", "fasta_empty_record", "nul",
    "fasta_bad_letters",
}


# ---------------------------------------------------------------- sequence-format mutators

def fasta_no_header(data: bytes, rng):
    ls = lines_of(data)
    return join([l for l in ls if not l.startswith(b">")]), "every '>' header line removed"


def fasta_empty_record(data: bytes, rng):
    ls = lines_of(data)
    p = rng.randrange(len(ls) + 1)
    ls.insert(p, b">empty_record\n")
    return join(ls), f"a header with no sequence inserted at line {p + 1}"


def _replace_sequence_letters(data: bytes, rng, letters: bytes, what: str):
    """Set 1-5 characters of one sequence line to letters drawn from `letters`."""
    ls = lines_of(data)
    seq = [i for i, l in enumerate(ls) if l.strip() and not l.startswith((b">", b"@", b"+"))]
    if not seq:
        return byte_flip(data, rng)
    i = rng.choice(seq)
    s = bytearray(ls[i])
    for _ in range(rng.randint(1, 5)):
        w = rng.randrange(max(1, len(s.rstrip(b"\r\n"))))
        s[w] = rng.choice(letters)
    ls[i] = bytes(s)
    return join(ls), f"{what} on line {i + 1}"


def fasta_bad_letters(data: bytes, rng):
    return _replace_sequence_letters(data, rng, b"XZ*-.0123456789!?J", "non-nucleotide characters")


def fasta_iupac(data: bytes, rng):
    return _replace_sequence_letters(data, rng, b"RYKMSWBDHVNrykmswn", "IUPAC codes")


def fasta_dup_names(data: bytes, rng):
    ls = lines_of(data)
    heads = [i for i, l in enumerate(ls) if l.startswith(b">")]
    if len(heads) < 2:
        return duplicate_all(data, rng)
    first = ls[heads[0]]
    for h in heads[1:]:
        ls[h] = first
    return join(ls), "every record renamed to the first record's name"


def fasta_header_only_gt(data: bytes, rng):
    ls = lines_of(data)
    heads = [i for i, l in enumerate(ls) if l.startswith((b">", b"@"))]
    i = rng.choice(heads) if heads else 0
    if ls:
        ls[i] = ls[i][:1] + b"\n"
    return join(ls), f"record name on line {i + 1} removed (bare '{chr(ls[i][0]) if ls else '>'}')"


def fastq_qual_mismatch(data: bytes, rng):
    ls = lines_of(data)
    recs = [i for i in range(0, len(ls) - 3, 4) if ls[i].startswith(b"@")]
    if not recs:
        return byte_flip(data, rng)
    i = rng.choice(recs)
    q = ls[i + 3].rstrip(b"\r\n")
    ls[i + 3] = q[: max(0, len(q) - rng.randint(1, 20))] + b"\n"
    return join(ls), f"quality line of the record at line {i + 1} shorter than its sequence"


def fastq_no_plus(data: bytes, rng):
    ls = lines_of(data)
    recs = [i for i in range(0, len(ls) - 3, 4) if ls[i].startswith(b"@")]
    if not recs:
        return byte_flip(data, rng)
    i = rng.choice(recs)
    del ls[i + 2]
    return join(ls), f"the '+' line of the record at line {i + 1} deleted"


SEQ_MUTATORS = {
    "fasta_no_header": fasta_no_header,
    "fasta_empty_record": fasta_empty_record,
    "fasta_bad_letters": fasta_bad_letters,
    "fasta_iupac": fasta_iupac,
    "fasta_dup_names": fasta_dup_names,
    "fasta_bare_header": fasta_header_only_gt,
    "fasta_lower": lowercase_all,
}
FASTQ_MUTATORS = {
    "fastq_qual_short": fastq_qual_mismatch,
    "fastq_no_plus": fastq_no_plus,
}


# ---------------------------------------------------------------- BED-like mutators

def bed_start_after_end(data: bytes, rng):
    ls, idx = _content_lines(data, skip_header=False)
    idx = [i for i in idx if not ls[i].startswith(b"#")]
    if not idx:
        return byte_flip(data, rng)
    i = rng.choice(idx)
    f = ls[i].rstrip(b"\r\n").split(b"\t")
    if len(f) >= 3:
        f[1], f[2] = f[2], f[1]
    ls[i] = b"\t".join(f) + b"\n"
    return join(ls), f"start and end swapped on line {i + 1} (start > end)"


def bed_coord(data: bytes, rng, col: int, value: str):
    ls, idx = _content_lines(data, skip_header=False)
    idx = [i for i in idx if not ls[i].startswith(b"#")]
    if not idx:
        return byte_flip(data, rng)
    i = rng.choice(idx)
    f = ls[i].rstrip(b"\r\n").split(b"\t")
    if len(f) > col:
        f[col] = value.encode()
    ls[i] = b"\t".join(f) + b"\n"
    return join(ls), f"column {col + 1} of line {i + 1} set to {value!r}"


def bed_unknown_chrom(data: bytes, rng):
    return bed_coord(data, rng, 0, "chrNope")


BED_MUTATORS = {
    "bed_start_gt_end": bed_start_after_end,
    "bed_end_huge": lambda d, r: bed_coord(d, r, 2, "18446744073709551615"),
    "bed_end_past_chrom": lambda d, r: bed_coord(d, r, 2, "250000000"),
    "bed_start_neg": lambda d, r: bed_coord(d, r, 1, "-5"),
    "bed_zero_width": lambda d, r: _zero_width(d, r),
    "bed_unknown_chrom": bed_unknown_chrom,
    "bed_strand_bad": lambda d, r: bed_coord(d, r, 5, "x"),
}


def _zero_width(data, rng):
    ls, idx = _content_lines(data, skip_header=False)
    idx = [i for i in idx if not ls[i].startswith(b"#")]
    if not idx:
        return byte_flip(data, rng)
    i = rng.choice(idx)
    f = ls[i].rstrip(b"\r\n").split(b"\t")
    if len(f) >= 3:
        f[2] = f[1]
    ls[i] = b"\t".join(f) + b"\n"
    return join(ls), f"zero-width interval on line {i + 1}"


# ---------------------------------------------------------------- compressed files

def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as g:
        g.write(data)
    return buf.getvalue()


def bgzf_bytes(data: bytes, block: int = 60000) -> bytes:
    """BGZF (blocked gzip with the BC extra field) plus the empty end-of-file block."""
    out = bytearray()

    def one(chunk: bytes):
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        cdata = c.compress(chunk) + c.flush()
        bsize = len(cdata) + 25
        out.extend(b"\x1f\x8b\x08\x04" + b"\x00\x00\x00\x00" + b"\x00\xff" + struct.pack("<H", 6))
        out.extend(b"BC" + struct.pack("<HH", 2, bsize))
        out.extend(cdata)
        out.extend(struct.pack("<II", zlib.crc32(chunk) & 0xFFFFFFFF, len(chunk)))

    for i in range(0, len(data), block):
        one(data[i:i + block])
    one(b"")
    return bytes(out)


def gz_truncate(data, rng):
    cut = rng.randrange(10, max(11, len(data) - 1))
    return data[:cut], f"gzip stream truncated at byte {cut} of {len(data)}"


def gz_flip(data, rng):
    b = bytearray(data)
    n = rng.randint(1, 4)
    where = sorted(rng.randrange(10, max(11, len(b) - 8)) for _ in range(n))
    for w in where:
        if w < len(b):
            b[w] ^= rng.randrange(1, 256)
    return bytes(b), f"compressed bytes flipped at offsets {where} (CRC/deflate error)"


def gz_trailing_garbage(data, rng):
    return data + b"this is not gzip\n" * 3, "non-gzip bytes after the gzip member"


def gz_isize(data, rng):
    return data[:-4] + b"\xff\xff\xff\xff", "gzip trailer ISIZE set to 4294967295"


def gz_header_only(data, rng):
    return data[:10], "only the 10-byte gzip header"


def gz_empty_member(data, rng):
    return gzip_bytes(b""), "a valid gzip of an empty file"


GZ_MUTATORS = {
    "gz_truncate": gz_truncate,
    "gz_flip": gz_flip,
    "gz_trailing_garbage": gz_trailing_garbage,
    "gz_isize": gz_isize,
    "gz_header_only": gz_header_only,
    "gz_empty_member": gz_empty_member,
}


# ---------------------------------------------------------------- binary (bigWig) mutators

def put_u(data: bytes, off: int, size: int, value: int) -> bytes:
    fmt = {2: "<H", 4: "<I", 8: "<Q"}[size]
    value &= (1 << (8 * size)) - 1
    return data[:off] + struct.pack(fmt, value) + data[off + size:]


def bigwig_fields(data: bytes) -> dict[str, tuple[int, int]]:
    """Offsets and sizes of the bigWig header fields (and of the chromosome B+ tree header)."""
    f = {
        "version": (4, 2), "zoomLevels": (6, 2), "chromTreeOffset": (8, 8),
        "fullDataOffset": (16, 8), "fullIndexOffset": (24, 8), "fieldCount": (32, 2),
        "definedFieldCount": (34, 2), "autoSqlOffset": (36, 8), "totalSummaryOffset": (44, 8),
        "uncompressBufSize": (52, 4),
    }
    if len(data) >= 64:
        ct = struct.unpack_from("<Q", data, 8)[0]
        if ct + 32 <= len(data):
            f.update({
                "chromTree.blockSize": (ct + 4, 4), "chromTree.keySize": (ct + 8, 4),
                "chromTree.valSize": (ct + 12, 4), "chromTree.itemCount": (ct + 16, 8),
            })
        fd = struct.unpack_from("<Q", data, 16)[0]
        if fd + 8 <= len(data):
            f["dataCount"] = (fd, 8)
        fi = struct.unpack_from("<Q", data, 24)[0]
        if fi + 48 <= len(data):
            f.update({
                "rtree.blockSize": (fi + 4, 4), "rtree.itemCount": (fi + 8, 8),
                "rtree.endBase": (fi + 28, 4), "rtree.itemsPerSlot": (fi + 40, 4),
            })
    return f


# ---------------------------------------------------------------- safetensors


DTYPE_SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "U16": 2, "I16": 2, "F16": 2, "BF16": 2, "U32": 4,
              "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8}
INT_FMT = {"U8": "<B", "I8": "<b", "U16": "<H", "I16": "<h", "U32": "<I", "I32": "<i",
           "U64": "<Q", "I64": "<q"}
FLOAT_FMT = {"F32": "<f", "F64": "<d"}
# A dtype of the same width (passes safetensors' own size check; the tool must look at it).
SAME_WIDTH = {"U8": "I8", "I8": "U8", "BOOL": "U8", "U16": "F16", "I16": "U16", "F16": "BF16",
              "BF16": "F16", "U32": "F32", "I32": "F32", "F32": "I32", "U64": "F64", "I64": "F64",
              "F64": "I64"}
OTHER_WIDTH = {"U8": "F32", "I8": "I64", "BOOL": "F64", "U16": "U8", "I16": "I64", "F16": "F64",
               "BF16": "U8", "U32": "U8", "I32": "I64", "F32": "F64", "U64": "U8", "I64": "I32",
               "F64": "F32"}


class Safetensors:
    """A parsed safetensors file: tensors (dtype, shape, bytes) and the string metadata."""

    def __init__(self, raw: bytes):
        n = struct.unpack_from("<Q", raw, 0)[0]
        header = json.loads(raw[8:8 + n])
        self.meta = header.pop("__metadata__", None)
        data = raw[8 + n:]
        self.tensors: dict[str, dict] = {}
        for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            b0, b1 = t["data_offsets"]
            self.tensors[name] = {"dtype": t["dtype"], "shape": list(t["shape"]),
                                  "blob": data[b0:b1]}

    def copy(self) -> "Safetensors":
        c = Safetensors.__new__(Safetensors)
        c.meta = json.loads(json.dumps(self.meta)) if self.meta is not None else None
        c.tensors = {k: {"dtype": v["dtype"], "shape": list(v["shape"]), "blob": v["blob"]}
                     for k, v in self.tensors.items()}
        return c

    def encode(self, header_override: dict | None = None) -> bytes:
        """Lays the tensors out contiguously (in name order, as our writers do); a
        `header_override` {name: {field: value}} is applied after layout (offsets included)."""
        header, data, off = {}, bytearray(), 0
        for name in sorted(self.tensors):
            t = self.tensors[name]
            header[name] = {"dtype": t["dtype"], "shape": t["shape"],
                            "data_offsets": [off, off + len(t["blob"])]}
            data += t["blob"]
            off += len(t["blob"])
        for name, fields in (header_override or {}).items():
            header.setdefault(name, {}).update(fields)
        h = {}
        if self.meta is not None:
            h["__metadata__"] = self.meta
        h.update(header)
        js = json.dumps(h, separators=(",", ":")).encode()
        js += b" " * ((8 - len(js) % 8) % 8)
        return struct.pack("<Q", len(js)) + js + bytes(data)

    def luminome(self) -> dict | None:
        try:
            return json.loads(self.meta["luminome"])
        except (TypeError, KeyError, ValueError):
            return None

    def set_luminome(self, value: dict):
        self.meta["luminome"] = json.dumps(value, separators=(",", ":"))


def set_elements(t: dict, value, rng: random.Random, fraction: float = 0.1) -> int:
    """Overwrite a fraction of a tensor's elements with `value` (clamped to an int dtype)."""
    size = DTYPE_SIZE.get(t["dtype"], 1)
    n = len(t["blob"]) // size
    fmt = INT_FMT.get(t["dtype"]) or FLOAT_FMT.get(t["dtype"])
    if not fmt or n == 0:
        return 0
    data = bytearray(t["blob"])
    picks = sorted(rng.sample(range(n), max(1, min(n, int(n * fraction)))))
    for p in picks:
        v = value
        if t["dtype"] in INT_FMT:
            bits = 8 * size
            v = int(v)
            if fmt[1].isupper():
                v &= (1 << bits) - 1
            else:
                v = max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))
        struct.pack_into(fmt, data, p * size, v)
    t["blob"] = bytes(data)
    return len(picks)


def _json_leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _json_leaves(v, path + (k,))
    elif isinstance(obj, list) and obj and not all(isinstance(x, str) for x in obj):
        for i, v in enumerate(obj[:4]):
            yield from _json_leaves(v, path + (i,))
    else:
        yield path, obj


def _set_path(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    if value is _DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


_DELETE = object()
KINDS = ["luminome.token_dataset", "luminome.pair_dataset", "luminome.region_dataset",
         "luminome.retrieval_pairs", "luminome.checkpoint", "something.else"]


def safetensors_mutations(raw: bytes, rng: random.Random, role: str):
    """All the safetensors mutations of one file, as (name, bytes, note, expect).

    `role` is "dataset" or "checkpoint": datasets get a mutation per tensor, checkpoints a few
    weights picked at random (they hold dozens)."""
    st = Safetensors(raw)
    names = sorted(st.tensors)
    out = []

    def add(name, data, note, expect="refuse"):
        out.append((name, data, note, expect))

    n = struct.unpack_from("<Q", raw, 0)[0]
    cut = rng.randrange(9, 8 + n)
    add("st_trunc_header", raw[:cut], f"cut at byte {cut}, inside the {n}-byte JSON header")
    if len(raw) > 8 + n + 1:
        cut = rng.randrange(8 + n + 1, len(raw))
        add("st_trunc_data", raw[:cut], f"cut at byte {cut} of {len(raw)}, inside the tensor data")
    add("st_trunc_5", raw[:5], "only the first 5 bytes (less than the 8-byte length)")
    add("st_hlen_max", put_u(raw, 0, 8, (1 << 64) - 1),
        "header length field set to 18446744073709551615")
    add("st_hlen_past_end", put_u(raw, 0, 8, len(raw) + 4096),
        f"header length field set to {len(raw) + 4096} (past the end of the file)")
    add("st_hlen_2g", put_u(raw, 0, 8, 1 << 31), "header length field set to 2^31")
    add("st_hlen_zero", put_u(raw, 0, 8, 0), "header length field set to 0")
    b = bytearray(raw)
    w = rng.randrange(8, 8 + n)
    b[w] = rng.choice(b'{}[]":,0x\x00')
    add("st_json_flip", bytes(b), f"header byte {w} replaced (JSON damage)")
    js = b"[]" + b" " * 6
    add("st_json_array", struct.pack("<Q", len(js)) + js + raw[8 + n:], "header is the JSON '[]'")

    big = names[0]
    big = max(names, key=lambda k: len(st.tensors[k]["blob"]))
    picks = names if role == "dataset" else rng.sample(names, min(3, len(names)))
    if role == "checkpoint" and big not in picks:
        picks.append(big)
    for t in picks:
        d = st.tensors[t]["dtype"]
        c = st.copy()
        c.tensors[t]["dtype"] = SAME_WIDTH.get(d, "U8")
        add(f"st_dtype_same_{t}", c.encode(), f"{t}: dtype {d} -> {c.tensors[t]['dtype']} (same width)")
        c = st.copy()
        del c.tensors[t]
        add(f"st_drop_{t}", c.encode(), f"tensor {t} removed")
    for t in rng.sample(picks, min(2, len(picks))):
        d = st.tensors[t]["dtype"]
        add(f"st_dtype_other_{t}", st.encode({t: {"dtype": OTHER_WIDTH.get(d, "F64")}}),
            f"{t}: dtype {d} -> {OTHER_WIDTH.get(d, 'F64')} (size no longer matches the offsets)")

    t = big
    shape = st.tensors[t]["shape"]
    add("st_shape_huge", st.encode({t: {"shape": [1 << 40] + shape[1:]}}),
        f"{t}: shape {shape} -> first dimension 2^40 (offsets unchanged)")
    c = st.copy()
    c.tensors[t]["shape"] = [1 << 61, 8] if DTYPE_SIZE[c.tensors[t]["dtype"]] == 1 else [1 << 60, 16 // DTYPE_SIZE[c.tensors[t]["dtype"]]]
    c.tensors[t]["blob"] = b""
    add("st_shape_overflow", c.encode(),
        f"{t}: shape {c.tensors[t]['shape']} whose byte size overflows u64 to 0, with 0 data bytes")
    if len(shape) >= 2:
        add("st_shape_swap", st.encode({t: {"shape": list(reversed(shape))}}),
            f"{t}: shape {shape} -> {list(reversed(shape))} (same size)")
    if shape and shape[0] > 1:
        c = st.copy()
        rows = shape[0]
        row_bytes = len(c.tensors[t]["blob"]) // rows
        c.tensors[t]["shape"] = [rows - 1] + shape[1:]
        c.tensors[t]["blob"] = c.tensors[t]["blob"][: row_bytes * (rows - 1)]
        add("st_rows_mismatch", c.encode(), f"{t}: one row fewer ({rows - 1}) than the other tensors")
    if role == "dataset":
        c = st.copy()
        for k, v in c.tensors.items():
            if v["shape"]:
                v["shape"] = [0] + v["shape"][1:]
                v["blob"] = b""
        add("st_zero_rows", c.encode(), "every tensor has 0 rows (an empty dataset)", "either")
    last = max(names, key=lambda k: st.tensors[k]["blob"] and 1)
    enc = st.encode()
    hdr = json.loads(enc[8:8 + struct.unpack_from("<Q", enc)[0]])
    lastname = max((k for k in hdr if k != "__metadata__"), key=lambda k: hdr[k]["data_offsets"][1])
    e = hdr[lastname]["data_offsets"][1]
    add("st_offsets_oob", st.encode({lastname: {"data_offsets": [hdr[lastname]["data_offsets"][0], e + 4096]}}),
        f"{lastname}: data end offset 4096 bytes past the data")
    b0, b1 = hdr[t]["data_offsets"]
    add("st_offsets_reversed", st.encode({t: {"data_offsets": [b1, b0]}}),
        f"{t}: data_offsets reversed [{b1}, {b0}]")
    add("st_offsets_huge", st.encode({t: {"data_offsets": [b0, (1 << 64) - 1]}}),
        f"{t}: data end offset 18446744073709551615")
    c = st.copy()
    old = sorted(c.tensors)[0]
    c.tensors["renamed_" + old] = c.tensors.pop(old)
    add("st_rename", c.encode(), f"tensor {old} renamed", "refuse")
    c = st.copy()
    c.tensors["zz_extra"] = {"dtype": "U8", "shape": [3], "blob": b"\x01\x02\x03"}
    add("st_extra_tensor", c.encode(), "an unknown tensor zz_extra added", "either")
    c = st.copy()
    c.meta = None
    add("st_meta_drop", c.encode(), "no __metadata__")
    if st.meta is not None:
        kind = st.meta.get("kind")
        others = [k for k in KINDS if k != kind]
        for k in rng.sample(others, 2):
            c = st.copy()
            c.meta["kind"] = k
            add("st_meta_kind_" + k.split(".")[-1], c.encode(), f"metadata kind {kind!r} -> {k!r}")
        c = st.copy()
        c.meta["format_version"] = "999"
        add("st_meta_version", c.encode(), "metadata format_version '999'")
        if "luminome" in st.meta:
            c = st.copy()
            c.meta["luminome"] = c.meta["luminome"][: len(c.meta["luminome"]) // 2]
            add("st_meta_json_cut", c.encode(), "metadata 'luminome' JSON cut in half")
            c = st.copy()
            c.meta["luminome"] = "null"
            add("st_meta_json_null", c.encode(), "metadata 'luminome' is the JSON null")
            lum = st.luminome()
            if lum:
                leaves = [(p, v) for p, v in _json_leaves(lum) if p]
                nums = [(p, v) for p, v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool)]
                strs = [(p, v) for p, v in leaves if isinstance(v, str)]
                lists = [(p, v) for p, v in leaves if isinstance(v, list)]
                for p, v in rng.sample(nums, min(4, len(nums))):
                    val = rng.choice([-1, 0, 18446744073709551615, 1e300, 4294967296])
                    c = st.copy()
                    l2 = json.loads(c.meta["luminome"])
                    _set_path(l2, p, val)
                    c.set_luminome(l2)
                    add("st_meta_num_" + "_".join(map(str, p))[-40:], c.encode(),
                        f"metadata luminome.{'.'.join(map(str, p))}: {v!r} -> {val!r}", "either")
                for p, v in rng.sample(strs, min(2, len(strs))):
                    c = st.copy()
                    l2 = json.loads(c.meta["luminome"])
                    _set_path(l2, p, rng.choice(["", "garbage", 7]))
                    c.set_luminome(l2)
                    add("st_meta_str_" + "_".join(map(str, p))[-40:], c.encode(),
                        f"metadata luminome.{'.'.join(map(str, p))}: {v!r} -> damaged", "either")
                for p, v in rng.sample(lists, min(2, len(lists))):
                    c = st.copy()
                    l2 = json.loads(c.meta["luminome"])
                    _set_path(l2, p, v[: max(0, min(len(v) - 1, 3))])
                    c.set_luminome(l2)
                    add("st_meta_list_" + "_".join(map(str, p))[-40:], c.encode(),
                        f"metadata luminome.{'.'.join(map(str, p))}: list of {len(v)} cut to {min(len(v) - 1, 3)}",
                        "either")
                top = [k for k in lum if isinstance(k, str)]
                for k in rng.sample(top, min(2, len(top))):
                    c = st.copy()
                    l2 = json.loads(c.meta["luminome"])
                    del l2[k]
                    c.set_luminome(l2)
                    add("st_meta_del_" + k, c.encode(), f"metadata luminome.{k} deleted", "either")
    # Values that no valid writer produces.
    for t in picks:
        d = st.tensors[t]["dtype"]
        c = st.copy()
        if d in INT_FMT:
            v = rng.choice([-1, 255, 1 << 40, -(1 << 40), (1 << 63) - 1])
            k = set_elements(c.tensors[t], v, rng)
            add(f"st_values_{t}", c.encode(), f"{k} elements of {t} ({d}) set to {v}", "either")
        elif d in FLOAT_FMT:
            v = rng.choice([float("nan"), float("inf"), -float("inf"), 1e30])
            k = set_elements(c.tensors[t], v, rng)
            add(f"st_values_{t}", c.encode(), f"{k} elements of {t} ({d}) set to {v}", "either")
    c = st.copy()
    t = rng.choice(names)
    b = bytearray(c.tensors[t]["blob"])
    for _ in range(min(8, len(b))):
        w = rng.randrange(len(b))
        b[w] ^= rng.randrange(1, 256)
    c.tensors[t]["blob"] = bytes(b)
    add("st_data_flip", c.encode(), f"8 bytes of {t}'s data flipped", "either")
    add("st_trailing", raw + b"\x00garbage", "bytes appended after the data", "either")
    return out
