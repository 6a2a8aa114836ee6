#!/usr/bin/env python3
"""Checks nextflow_schema.json and the samplesheet schemas without Nextflow.

Nextflow (and so nf-schema) cannot run on the CI machine; this script does what the checks at
the start of a run would, with the same schemas:

- nextflow_schema.json and assets/schema_*.json are valid JSON Schema draft 2020-12, and
  nextflow_schema.json has the nf-core layout ($defs groups with title, description and fa_icon,
  each brought in once by allOf; every parameter typed, described, with an icon);
- the parameters of nextflow.config's params {} block are exactly those of the schema, with the
  same defaults (none in the schema <=> null in the config), every params.X that main.nf or a
  config file reads is one of them, and each of them is read somewhere (or is nf-schema's --help);
- validateParameters(): the defaults with test.config's values on top pass (files that must exist
  exist, each samplesheet valid against the schema its parameter names), the defaults alone fail
  only for the missing --input, and a parameter given without the one it needs fails;
- samplesheetToList(): each samplesheet named by test.config is read the way nf-schema reads it
  (values typed, empty cells left out, unknown columns an error as validation.logging sets) and
  is valid against its schema, every file it names exists (relative to the CSV's folder, as
  main.nf resolves it), and the closure after each samplesheetToList() call in main.nf names the
  schema's columns in the order nf-schema returns them (meta first);
- the gpu profile's containerOptions for process_gpu is --gpu_container_options when given, else
  --gpus all (docker) or --nv (singularity, apptainer);
- broken samplesheets made from the test ones (a missing column, a bad file extension, a
  duplicate id, a misspelt column, columns that go together given apart) are rejected.

nf-schema's own keywords are emulated: uniqueEntries, its lenient "string" type for typed CSV
values, exists and schema on file-path parameters. Run from anywhere; exits non-zero on failure.
"""

import copy
import csv
import json
import re
import sys
import tempfile
from pathlib import Path

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

PIPELINE = Path(__file__).resolve().parent
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
CSV_SCHEMAS = ["assets/schema_input.json", "assets/schema_regions.json", "assets/schema_pairs.json"]
# The columns holding paths, per samplesheet schema: how main.nf reads each (a path, PATH;PATH,
# or CELLTYPE=PATH;CELLTYPE=PATH).
PATH_COLUMNS = {
    "assets/schema_input.json": {"input": "path", "reference": "path"},
    "assets/schema_regions.json": {
        "reference": "path",
        "genes": "path",
        "peaks": "paths",
        "accessibility": "celltype_paths",
        "expression": "celltype_paths",
        "motifs": "path",
        "motif_clusters": "path",
    },
    "assets/schema_pairs.json": {"sequences": "path", "strand_b": "path", "variants": "path"},
}

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


# --- nf-schema's keywords ---------------------------------------------------------------------


def lenient_type(validator, types, instance, schema):
    """nf-schema types CSV values ("1" -> 1) and lets a "string" column take any of them."""
    names = [types] if isinstance(types, str) else types
    if "string" in names and (instance is None or isinstance(instance, (str, int, float, bool))):
        return
    yield from Draft202012Validator.VALIDATORS["type"](validator, types, instance, schema)


def unique_entries(validator, keys, instance, schema):
    if not validator.is_type(instance, "array"):
        return
    seen = {}
    for number, entry in enumerate(instance, start=1):
        if not isinstance(entry, dict):
            continue
        key = tuple(entry.get(k) for k in keys)
        if key in seen:
            values = ", ".join(f"{k}={v}" for k, v in zip(keys, key))
            yield ValidationError(f"entry {number}: {values} is not unique (entry {seen[key]})")
        else:
            seen[key] = number


SamplesheetValidator = validators.extend(
    Draft202012Validator, {"type": lenient_type, "uniqueEntries": unique_entries}
)


def exists_keyword(validator, exists, instance, schema):
    if not isinstance(instance, str) or schema.get("format") != "file-path":
        return
    if Path(instance).is_file() != bool(exists):
        yield ValidationError(f"the file '{instance}' {'does not exist' if exists else 'exists'}")


def schema_keyword(validator, schema_path, instance, schema):
    """A file-path parameter's samplesheet must be valid against the schema it names."""
    if not isinstance(instance, str) or not Path(instance).is_file():
        return
    for error in samplesheet_errors(Path(instance), schema_path):
        yield ValidationError(f"{instance}: {error}")


ParamsValidator = validators.extend(
    Draft202012Validator, {"exists": exists_keyword, "schema": schema_keyword}
)


def messages(validator, instance):
    """Error messages, each with the schema's errorMessage after it as nf-schema prints it."""
    out = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path)
        hint = error.schema.get("errorMessage") if isinstance(error.schema, dict) else None
        out.append(f"{where or '(top)'}: {error.message}" + (f" ({hint})" if hint else ""))
    return out


# --- reading samplesheets the way nf-schema does ------------------------------------------------


def infer(value):
    """org.json's JSONObject.stringToValue, as nf-schema applies it to every CSV cell."""
    if value == "":
        return None
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value.lower() == "null":
        return None
    if value[0] in "0123456789-.":
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                pass
    return value


def read_samplesheet(path):
    """Rows as nf-schema validates them (empty cells and nulls left out), and the header."""
    delimiter = "\t" if path.suffix == ".tsv" else ","
    with path.open(newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        header = [h.strip() for h in next(reader, [])]
        rows = []
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            row = {}
            for name, cell in zip(header, cells):
                value = infer(cell.strip())
                if value is not None:
                    row[name] = value
            rows.append(row)
    return header, rows


def load_json(relative):
    return json.loads((PIPELINE / relative).read_text())


def samplesheet_errors(path, schema_path):
    schema = load_json(schema_path)
    header, rows = read_samplesheet(path)
    known = schema["items"]["properties"]
    errors = [f"unrecognised column '{h}' (validation.logging.unrecognisedHeaders = 'error')"
              for h in header if h not in known]
    errors += messages(SamplesheetValidator(schema), rows)
    return errors


def samplesheet_to_list(path, schema_path):
    """samplesheetToList(): [meta, the other columns in the schema's order], [] for empty."""
    schema = load_json(schema_path)
    _, rows = read_samplesheet(path)
    entries = []
    for row in rows:
        meta, values = {}, []
        for name, spec in schema["items"]["properties"].items():
            value = row.get(name, spec.get("default", []))
            if "meta" in spec:
                for key in [spec["meta"]] if isinstance(spec["meta"], str) else spec["meta"]:
                    meta[key] = value
            else:
                values.append(value)
        entries.append([meta, *values] if meta else values)
    return entries


def columns_of(schema_path):
    """The closure parameters a row of samplesheetToList() fills: meta, then the other columns."""
    properties = load_json(schema_path)["items"]["properties"]
    return ["meta"] + [name for name, spec in properties.items() if "meta" not in spec]


def files_named(path, schema_path):
    """Every file a samplesheet names, resolved from its folder as main.nf does."""
    schema = load_json(schema_path)
    _, rows = read_samplesheet(path)
    found = []
    for row in rows:
        for column, kind in PATH_COLUMNS[schema_path].items():
            value = row.get(column)
            if value is None:
                continue
            entries = str(value).split(";") if kind != "path" else [str(value)]
            for entry in filter(None, (e.strip() for e in entries)):
                if kind == "celltype_paths":
                    entry = entry.split("=", 1)[1]
                location = entry if entry.startswith("/") or "://" in entry else path.parent / entry
                found.append((row.get("id"), column, Path(location)))
    assert set(PATH_COLUMNS[schema_path]) <= set(schema["items"]["properties"]), schema_path
    return found


# --- Nextflow config: params {} blocks ----------------------------------------------------------


def strip_comments(text):
    """Nextflow/Groovy text with // and /* */ comments blanked, strings kept."""
    out, i, quote = [], 0, None
    while i < len(text):
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.index("*/", i) + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def params_block(path):
    """The top-level params { ... } block of a config file, without comments."""
    text = strip_comments(path.read_text())
    match = re.search(r"^params\s*\{", text, re.MULTILINE)
    if not match:
        return ""
    depth, i = 1, match.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[match.end(): i - 1]


def literal(value, where):
    """A config value: null, true/false, a number or a string ("${projectDir}" filled in)."""
    if value == "null":
        return None
    if value in ("true", "false"):
        return value == "true"
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"-?\d+\.\d*", value):
        return float(value)
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("\\'", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        text = value[1:-1].replace("${projectDir}", str(PIPELINE)).replace("${baseDir}", str(PIPELINE))
        check("${" not in text and "$" not in text.replace("\\$", ""),
              f"{where}: only ${{projectDir}} can be interpolated here: {value}")
        return text
    failures.append(f"{where}: not a literal this check can read: {value}")
    return None


def config_params(path):
    params = {}
    for number, line in enumerate(params_block(path).splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(.+)", line)
        if not check(match, f"{path.name}: params line not 'name = value': {line}"):
            continue
        name, value = match.groups()
        check(name not in params, f"{path.name}: params.{name} set twice")
        params[name] = literal(value.strip(), f"{path.name}: params.{name}")
    return params


def params_read(paths):
    used = {}
    for path in paths:
        for name in re.findall(r"\bparams\.([A-Za-z_]\w*)", strip_comments(path.read_text())):
            used.setdefault(name, set()).add(str(path.relative_to(PIPELINE)))
    return used


# --- the checks ---------------------------------------------------------------------------------


def check_layout(schema):
    check(schema.get("$schema") == DRAFT_2020_12, f"nextflow_schema.json: $schema is not {DRAFT_2020_12}")
    check(schema.get("type") == "object", "nextflow_schema.json: type is not object")
    check("properties" not in schema, "nextflow_schema.json: parameters outside a $defs group")
    defs = schema.get("$defs", {})
    refs = [entry.get("$ref") for entry in schema.get("allOf", [])]
    check(sorted(refs) == sorted(f"#/$defs/{name}" for name in defs),
          f"nextflow_schema.json: allOf {refs} does not bring in each of $defs {sorted(defs)} once")
    params = {}
    for group_name, group in defs.items():
        for key in ("title", "description", "fa_icon", "properties"):
            check(key in group, f"nextflow_schema.json: $defs/{group_name} has no {key}")
        check(group.get("type") == "object", f"nextflow_schema.json: $defs/{group_name} is not an object")
        for name, spec in group.get("properties", {}).items():
            check(name not in params, f"nextflow_schema.json: {name} in two groups")
            params[name] = spec
            for key in ("type", "description", "fa_icon"):
                check(key in spec, f"nextflow_schema.json: {name} has no {key}")
            check(spec.get("default", "") is not None, f"nextflow_schema.json: {name}: null default (leave it out)")
            if "schema" in spec:
                check(spec.get("format") == "file-path" and (PIPELINE / spec["schema"]).is_file(),
                      f"nextflow_schema.json: {name}: schema {spec['schema']} needs format file-path and must exist")
        for name in group.get("required", []):
            check(name in group.get("properties", {}), f"nextflow_schema.json: required {name} not in $defs/{group_name}")
    return params


def check_params(schema_params, defaults, test_values):
    config_names, schema_names = set(defaults), set(schema_params)
    check(config_names == schema_names,
          f"params in nextflow.config but not in nextflow_schema.json: {sorted(config_names - schema_names)}; "
          f"in nextflow_schema.json but not in nextflow.config: {sorted(schema_names - config_names)}")
    for name in sorted(config_names & schema_names):
        spec = schema_params[name]
        if defaults[name] is None:
            check("default" not in spec, f"{name}: null in nextflow.config but the schema has default {spec.get('default')!r}")
        else:
            check(spec.get("default") == defaults[name] and type(spec.get("default")) is type(defaults[name]),
                  f"{name}: default {defaults[name]!r} in nextflow.config, {spec.get('default')!r} in nextflow_schema.json")
    unknown = sorted(set(test_values) - schema_names)
    check(not unknown, f"conf/test.config sets params that nextflow_schema.json lacks: {unknown}")
    files = [PIPELINE / "main.nf", PIPELINE / "nextflow.config", *sorted((PIPELINE / "conf").glob("*.config"))]
    read = params_read(files)
    for name, where in sorted(read.items()):
        check(name in schema_names, f"params.{name} read in {sorted(where)} is not in nextflow_schema.json")
    # nf-schema reads the help parameters itself.
    unread = sorted(schema_names - set(read) - {"help", "help_full", "show_hidden"})
    check(not unread, f"params that main.nf and the config files never read: {unread}")


def check_validate_parameters(schema, defaults, test_values):
    validator = ParamsValidator(schema)
    present = lambda values: {k: v for k, v in values.items() if v is not None}  # noqa: E731
    test_params = present({**defaults, **test_values})
    errors = messages(validator, test_params)
    check(not errors, "validateParameters() with -profile test: " + "; ".join(errors))

    errors = messages(validator, present(defaults))
    check(len(errors) == 1 and "'input' is a required property" in errors[0],
          f"validateParameters() without --input should only miss --input: {errors}")

    broken = [
        ("--predict_dataset without --train_dataset", {"predict_dataset": "prom_test"}, "is a dependency of"),
        ("--variants_dataset without --bistrand_train", {"variants_dataset": "x", "pairs_input": test_values.get("pairs_input")}, "is a dependency of"),
        ("--input that is not a CSV/TSV", {"input": str(PIPELINE / "main.nf")}, "does not match"),
        ("--input that does not exist", {"input": str(PIPELINE / "assets/absent.csv")}, "does not exist"),
        ("--publish_dir_mode not a publishDir mode", {"publish_dir_mode": "hardlink"}, "is not one of"),
        ("--mlm as a string", {"mlm": "yes"}, "is not of type"),
        ("--train_dataset with a space", {"train_dataset": "prom train"}, "does not match"),
    ]
    for label, change, expected in broken:
        base = present({**defaults, "input": test_values["input"]})
        errors = messages(validator, present({**base, **change}))
        check(any(expected in e for e in errors), f"validateParameters() accepted {label} (errors: {errors})")
    print(f"validateParameters(): -profile test valid, {len(broken) + 1} broken parameter sets rejected")


def check_main_nf_rows():
    text = strip_comments((PIPELINE / "main.nf").read_text())
    calls = re.findall(
        r'samplesheetToList\(\s*params\.(\w+)\s*,\s*"([^"]+)"\s*\)\s*\)\s*\.map\s*\{\s*([\w\s,]+?)\s*->', text
    )
    schema_params = {}
    for group in load_json("nextflow_schema.json")["$defs"].values():
        schema_params.update(group["properties"])
    check(sorted(c[1] for c in calls) == sorted(CSV_SCHEMAS),
          f"main.nf: samplesheetToList(params.X, \"assets/...\").map {{ ... }} calls use {[c[1] for c in calls]}, not {CSV_SCHEMAS}")
    check("splitCsv" not in text, "main.nf still parses a CSV by hand (splitCsv)")
    for param, schema_path, names in calls:
        names = [n.strip() for n in names.split(",")]
        check(names == columns_of(schema_path),
              f"main.nf: the rows of {schema_path} are {columns_of(schema_path)}, the closure takes {names}")
        check(schema_params.get(param, {}).get("schema") == schema_path,
              f"nextflow_schema.json: params.{param} should name schema {schema_path}")
    return {schema_path: param for param, schema_path, _ in calls}


def check_samplesheets(param_of, test_values):
    for schema_path in CSV_SCHEMAS:
        schema = load_json(schema_path)
        check(schema.get("$schema") == DRAFT_2020_12, f"{schema_path}: $schema is not {DRAFT_2020_12}")
        check(schema.get("type") == "array" and "items" in schema and "properties" not in schema,
              f"{schema_path}: nf-schema wants type array with items (not properties) at the top")
        path = Path(test_values[param_of[schema_path]])
        errors = samplesheet_errors(path, schema_path)
        check(not errors, f"{path.name} against {schema_path}: {errors}")
        for dataset, column, file in files_named(path, schema_path):
            check(file.is_file(), f"{path.name}: {dataset}: {column} {file} does not exist")
        rows = samplesheet_to_list(path, schema_path)
        check(all(isinstance(row[0], dict) and row[0].get("id") for row in rows), f"{path.name}: rows without meta.id")
        print(f"{path.name}: valid against {schema_path}, {len(rows)} rows, files exist; "
              f"rows [{', '.join(columns_of(schema_path))}], first meta {rows[0][0]}")


def check_gpu_profile():
    """-profile gpu: containerOptions of process_gpu reads --gpu_container_options, else the
    engine's default. (The closure's text is checked; Nextflow is not here to evaluate it.)"""
    text = strip_comments((PIPELINE / "nextflow.config").read_text())
    profile = re.search(r"\n\s*gpu\s*\{(.*?)\n    \}", text, re.DOTALL)
    if not check(profile, "nextflow.config: no gpu profile"):
        return
    block = re.search(r"withLabel:\s*process_gpu\s*\{(.*)\}", profile.group(1), re.DOTALL)
    options = re.search(r"containerOptions\s*=\s*\{(.*?)\n\s*\}", block.group(1) if block else "", re.DOTALL)
    body = " ".join(options.group(1).split()) if options else ""
    for needed in ("params.gpu_container_options != null ? params.gpu_container_options",
                   "workflow.containerEngine == 'docker' ? '--gpus all'",
                   "workflow.containerEngine in ['singularity', 'apptainer'] ? '--nv'"):
        check(needed in body, f"nextflow.config: gpu profile: process_gpu containerOptions lacks {needed!r}: {body!r}")
    check(block and re.search(r"accelerator\s*=\s*1", block.group(1)), "nextflow.config: gpu profile: no accelerator = 1")
    print("gpu profile: process_gpu gets accelerator = 1 and containerOptions from --gpu_container_options, "
          "else --gpus all (docker) / --nv (singularity, apptainer)")


def write_csv(path, header, rows):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def check_broken_samplesheets(param_of, test_values):
    """Each broken copy of a test samplesheet must be rejected for the reason it was broken."""
    cases = {
        "assets/schema_input.json": [
            ("missing column input", lambda h, r: drop_column(h, r, "input"), "'input' is a required property"),
            ("bad file extension", lambda h, r: set_cell(h, r, 0, "input", "reads.docx"), "does not match"),
            ("duplicate id", lambda h, r: set_cell(h, r, 1, "id", r[0][h.index("id")]), "is not unique"),
            ("misspelt column", lambda h, r: (["refrence" if c == "reference" else c for c in h], r), "unrecognised column 'refrence'"),
            ("BED input without reference", lambda h, r: set_cell(h, r, 0, "input", "peaks.bed"), "'reference' is a required property"),
            ("id with a space", lambda h, r: set_cell(h, r, 0, "id", "prom train"), "does not match"),
            ("no rows", lambda h, r: (h, []), "should be non-empty"),
        ],
        "assets/schema_regions.json": [
            ("missing column accessibility", lambda h, r: drop_column(h, r, "accessibility"), "'accessibility' is a required property"),
            ("no genes and no --tile-step", lambda h, r: set_cell(h, r, 0, "genes", ""), "is not valid under any of the given schemas"),
            ("accessibility without CELLTYPE=", lambda h, r: set_cell(h, r, 0, "accessibility", "acc.bedgraph"), "does not match"),
            ("motif_clusters without motifs", lambda h, r: set_cell(h, r, 0, "motifs", ""), "'motifs' is a dependency of 'motif_clusters'"),
            ("duplicate id", lambda h, r: set_cell(h, r, 1, "id", r[0][h.index("id")]), "is not unique"),
        ],
        "assets/schema_pairs.json": [
            ("unknown type", lambda h, r: set_cell(h, r, 0, "type", "fastq"), "is not one of"),
            ("fasta_pair without strand_b", lambda h, r: set_cell(h, r, 0, "type", "fasta_pair"), "'strand_b' is a required property"),
            ("strand_b with type fasta", lambda h, r: set_cell(h, r, 0, "strand_b", "b.fa"), "should not be valid under"),
            ("variants row without variants", lambda h, r: set_cell(h, r, 2, "variants", ""), "'variants' is a required property"),
            ("bad variants extension", lambda h, r: set_cell(h, r, 2, "variants", "snvs.bam"), "does not match"),
            ("duplicate id", lambda h, r: set_cell(h, r, 1, "id", r[0][h.index("id")]), "is not unique"),
        ],
    }
    with tempfile.TemporaryDirectory() as tmp:
        count = 0
        for schema_path, broken in cases.items():
            source = Path(test_values[param_of[schema_path]])
            with source.open(newline="") as handle:
                header, *rows = list(csv.reader(handle))
            for label, breaks, expected in broken:
                new_header, new_rows = breaks(list(header), copy.deepcopy(rows))
                path = Path(tmp) / f"broken_{count}.csv"
                write_csv(path, new_header, new_rows)
                errors = samplesheet_errors(path, schema_path)
                check(any(expected in e for e in errors),
                      f"{source.name} with {label} was not rejected for it ({expected!r}): {errors}")
                count += 1
    print(f"{count} broken samplesheets rejected: " + "; ".join(
        f"{Path(s).name}: " + ", ".join(label for label, _, _ in c) for s, c in cases.items()))


def drop_column(header, rows, column):
    i = header.index(column)
    return header[:i] + header[i + 1:], [row[:i] + row[i + 1:] for row in rows]


def set_cell(header, rows, row, column, value):
    rows[row][header.index(column)] = value
    return header, rows


def main():
    for relative in ["nextflow_schema.json", *CSV_SCHEMAS]:
        try:
            Draft202012Validator.check_schema(load_json(relative))
        except Exception as error:  # jsonschema's SchemaError, or a JSON syntax error
            failures.append(f"{relative} is not a valid draft 2020-12 schema: {error}")
    if failures:
        return report()
    print(f"nextflow_schema.json and {', '.join(Path(p).name for p in CSV_SCHEMAS)}: valid draft 2020-12 schemas")

    schema = load_json("nextflow_schema.json")
    schema_params = check_layout(schema)
    defaults = config_params(PIPELINE / "nextflow.config")
    test_values = config_params(PIPELINE / "conf" / "test.config")
    check_params(schema_params, defaults, test_values)
    print(f"{len(schema_params)} params: the same in nextflow.config and nextflow_schema.json, same defaults; "
          f"every params.X read is one of them, and each is read")
    if failures:
        return report()
    check_validate_parameters(schema, defaults, test_values)
    check_gpu_profile()
    param_of = check_main_nf_rows()
    if failures:
        return report()
    check_samplesheets(param_of, test_values)
    check_broken_samplesheets(param_of, test_values)
    return report()


def report():
    for failure in failures:
        print(f"check_schema.py: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
