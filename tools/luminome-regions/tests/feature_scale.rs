//! `--feature-scale get | get-quantitative`: the input scale of published GET checkpoints,
//! checked against the raw values of the regions table, recomputed here independently; `raw`
//! (the default) leaves the outputs as they were.

mod common;

use common::*;
use luminome_io::region_dataset::RegionDataset;

/// What a run's regions table holds (raw values, whatever the feature scale).
struct Table {
    chrom: Vec<String>,
    start: Vec<u64>,
    end: Vec<u64>,
    /// Raw accessibility per cell type, one value per region.
    raw: HashMap<String, Vec<f64>>,
    features: Vec<String>,
    /// Raw motif scores, `[region][feature]`.
    scores: Vec<Vec<f32>>,
}

fn side(out: &Path, suffix: &str) -> PathBuf {
    let stem = out.file_stem().unwrap().to_string_lossy();
    out.with_file_name(format!("{stem}.{suffix}"))
}

fn read_table(path: &Path) -> Table {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let first_feature = header
        .iter()
        .rposition(|c| c.starts_with("acc:") || c.starts_with("acc_raw:"))
        .unwrap()
        + 1;
    let raw_cols: Vec<(usize, String)> = header
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.strip_prefix("acc_raw:").map(|ct| (i, ct.to_string())))
        .collect();
    let mut t = Table {
        chrom: Vec::new(),
        start: Vec::new(),
        end: Vec::new(),
        raw: raw_cols
            .iter()
            .map(|(_, c)| (c.clone(), Vec::new()))
            .collect(),
        features: header[first_feature..]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        scores: Vec::new(),
    };
    for (i, line) in lines.enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f[0], i.to_string(), "rows are numbered in order");
        t.chrom.push(f[1].to_string());
        t.start.push(f[2].parse().unwrap());
        t.end.push(f[3].parse().unwrap());
        for (col, ct) in &raw_cols {
            t.raw.get_mut(ct).unwrap().push(f[*col].parse().unwrap());
        }
        // f32 written shortest-round-trip: parsing gives back the very value the tool held.
        t.scores.push(
            f[first_feature..]
                .iter()
                .map(|v| v.parse::<f32>().unwrap())
                .collect(),
        );
    }
    t
}

/// GET's divisor: per feature, the largest raw score over the regions accessible in `ct`.
fn maxima(t: &Table, ct: &str) -> Vec<f32> {
    let raw = &t.raw[ct];
    (0..t.features.len())
        .map(|j| {
            (0..t.scores.len())
                .filter(|&r| raw[r] > 0.0)
                .map(|r| t.scores[r][j])
                .fold(0.0f32, f32::max)
        })
        .collect()
}

fn distance(start: u64, end: u64, tss: u64) -> u64 {
    if tss < start {
        start - tss
    } else if tss >= end {
        tss - (end - 1)
    } else {
        0
    }
}

/// The `n` regions of `chrom` closest to `tss` among those overlapping the window and kept by
/// `keep`, in table order (the tool's distance selection).
fn closest(
    t: &Table,
    chrom: &str,
    tss: u64,
    window: u64,
    n: usize,
    keep: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let (lo, hi) = (tss.saturating_sub(window / 2), tss + (window - window / 2));
    let mut cand: Vec<usize> = (0..t.chrom.len())
        .filter(|&r| t.chrom[r] == chrom && t.end[r] > lo && t.start[r] < hi && keep(r))
        .collect();
    cand.sort_by_key(|&r| (distance(t.start[r], t.end[r], tss), t.start[r]));
    cand.truncate(n);
    cand.sort_unstable();
    cand
}

/// What [`check_get`] saw.
#[derive(Debug, Default)]
struct Seen {
    /// Used slots checked.
    slots: usize,
    /// Motif values equal to 1 (a window holding its cell type's maximising region).
    ones: usize,
    /// Regions without accessibility in the cell type that a raw-scale window would have held.
    left_out: usize,
    /// The largest written value per feature.
    written_max: Vec<f32>,
}

/// Every written value of a `--feature-scale get[-quantitative]` dataset against the regions
/// table: motif columns = min(raw / max over the cell type's accessible regions, 1), the
/// accessibility column 1 (or raw / the window's largest raw value), every used slot a region
/// accessible in the sample's cell type, and the windows the `n` closest such regions.
fn check_get(out: &Path, quantitative: bool, window: u64, n: usize) -> Seen {
    let t = read_table(&side(out, "regions.tsv"));
    let rows = read_tsv(&side(out, "samples.tsv"));
    let tf = TensorFile::open(out).unwrap();
    let (features, rindex) = (
        tf.require("features").unwrap(),
        tf.require("region_index").unwrap(),
    );
    let nf = t.features.len();
    let width = nf + 1;
    assert_eq!(features.shape[2], width);
    let slots_per_sample = features.shape[1];
    let max: HashMap<String, Vec<f32>> = t
        .raw
        .keys()
        .map(|ct| (ct.clone(), maxima(&t, ct)))
        .collect();
    let mut seen = Seen {
        written_max: vec![0.0; nf],
        ..Default::default()
    };
    assert!(!rows.is_empty());
    for (s, row) in rows.iter().enumerate() {
        let ct = &row["cell_type"];
        let (raw, m) = (&t.raw[ct], &max[ct]);
        let used: usize = row["regions_used"].parse().unwrap();
        let tss: u64 = row["tss"].parse().unwrap();
        let (mut f, mut ri) = (Vec::new(), Vec::new());
        features.extend_f32(s, &mut f);
        rindex.extend_i64(s, &mut ri);
        // The window saw only the cell type's accessible regions.
        let regions: Vec<usize> = ri[..used].iter().map(|&r| r as usize).collect();
        assert_eq!(
            regions,
            closest(&t, &row["chrom"], tss, window, n, |r| raw[r] > 0.0),
            "sample {s} ({ct})"
        );
        seen.left_out += closest(&t, &row["chrom"], tss, window, n, |_| true)
            .iter()
            .filter(|&&r| raw[r] == 0.0)
            .count();
        let window_max = regions.iter().map(|&r| raw[r]).fold(0.0, f64::max);
        let mut acc_max = 0.0f32;
        for slot in 0..slots_per_sample {
            let v = &f[slot * width..(slot + 1) * width];
            if slot >= used {
                assert!(v.iter().all(|&x| x == 0.0) && ri[slot] == -1);
                continue;
            }
            let r = ri[slot] as usize;
            assert!(
                raw[r] > 0.0,
                "sample {s} slot {slot}: region {r} has no accessibility in {ct}"
            );
            seen.slots += 1;
            for j in 0..nf {
                let expected = if m[j] > 0.0 {
                    (t.scores[r][j] / m[j]).min(1.0)
                } else {
                    0.0
                };
                assert_eq!(
                    v[j].to_bits(),
                    expected.to_bits(),
                    "sample {s} ({ct}) slot {slot} (region {r}) {}: {} written, {expected} expected",
                    t.features[j],
                    v[j]
                );
                assert!((0.0..=1.0).contains(&v[j]));
                seen.ones += (v[j] == 1.0) as usize;
                seen.written_max[j] = seen.written_max[j].max(v[j]);
            }
            let acc = v[nf];
            if quantitative {
                assert_eq!(acc, (raw[r] / window_max) as f32, "sample {s} slot {slot}");
            } else {
                assert_eq!(acc, 1.0, "sample {s} slot {slot}");
            }
            acc_max = acc_max.max(acc);
        }
        if used > 0 {
            assert_eq!(
                acc_max, 1.0,
                "sample {s}: the window's accessibility peaks at 1"
            );
        }
    }
    seen
}

fn luminome_meta(out: &Path) -> serde_json::Value {
    let tf = TensorFile::open(out).unwrap();
    serde_json::from_str(&tf.metadata()["luminome"]).unwrap()
}

#[test]
fn get_divides_motif_columns_by_the_cell_types_maxima_over_its_accessible_regions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.safetensors");
    // N = 10 of a 200 kb window: a window holds more regions than N, so leaving out the
    // inaccessible ones must happen before the choice, not after.
    let mut args = with(base_args(), "--n-regions", Some("10"));
    args.extend(["--feature-scale".into(), "get".into()]);
    let o = run(&args, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("feature scale get"), "{}", stderr(&o));
    let seen = check_get(&out, false, 200_000, 10);
    assert!(seen.slots > 100, "{seen:?}");
    assert!(
        seen.ones > 0,
        "some window holds a maximising region: {seen:?}"
    );
    assert!(
        seen.left_out > 0,
        "some raw-scale window holds an inaccessible region: {seen:?}"
    );
    assert_eq!(luminome_meta(&out)["motif"]["feature_scale"], "get");
    let ds = RegionDataset::open(&out).unwrap();
    assert_eq!(ds.meta().feature_scale(), "get");
}

#[test]
fn get_quantitative_divides_accessibility_by_the_windows_largest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.safetensors");
    let mut args = with(base_args(), "--n-regions", Some("10"));
    args.extend(["--feature-scale".into(), "get-quantitative".into()]);
    let o = run(&args, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let seen = check_get(&out, true, 200_000, 10);
    assert!(seen.slots > 100 && seen.left_out > 0, "{seen:?}");
    let ds = RegionDataset::open(&out).unwrap();
    assert_eq!(ds.meta().feature_scale(), "get-quantitative");
}

/// A second sequence, `chrZ`, holding four copies of the CTCF peak (one region, accessible in
/// both cell types, no gene): its CTCF score is every cell type's maximum, so the windows of the
/// genes on chr22_slice never reach 1 in the CTCF column.
#[test]
fn get_maxima_are_genome_wide_and_a_reused_region_table_gives_the_same_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let fasta = std::fs::read_to_string(data("chr22_slice/chr22_slice.fa")).unwrap();
    let seq: String = fasta.lines().skip(1).collect();
    let site = &seq[CTCF_REGION.0 as usize..CTCF_REGION.1 as usize];
    let z = site.repeat(4);
    let reference = temp_file(
        dir.path(),
        "two.fa",
        &format!("{}\n>chrZ\n{z}\n", fasta.trim_end()),
    );
    let zline = format!("chrZ\t0\t{}", z.len());
    let peaks = std::fs::read_to_string(data("chr22_slice/peaks.narrowPeak")).unwrap();
    let peaks = temp_file(
        dir.path(),
        "two.narrowPeak",
        &format!("{peaks}{zline}\tz\t0\t.\t1\t1\t1\t10\n"),
    );
    let mut args = with(
        base_args(),
        "--reference",
        Some(reference.to_str().unwrap()),
    );
    args = with(args, "--peaks", Some(peaks.to_str().unwrap()));
    for (i, ct) in ["K562", "GM12878"].iter().enumerate() {
        let text =
            std::fs::read_to_string(data(&format!("chr22_slice/acc.{ct}.bedgraph"))).unwrap();
        let p = temp_file(
            dir.path(),
            &format!("{ct}.bedgraph"),
            &format!("{text}{zline}\t5\n"),
        );
        let at = args
            .iter()
            .enumerate()
            .filter(|(_, a)| *a == "--accessibility")
            .nth(i)
            .unwrap()
            .0;
        args[at + 1] = format!("{ct}={}", p.display());
    }
    args.extend(["--feature-scale".into(), "get".into()]);
    let out = dir.path().join("a.safetensors");
    let o = run(&args, &out);
    assert!(o.status.success(), "{}", stderr(&o));

    let t = read_table(&dir.path().join("a.regions.tsv"));
    let ctcf = t.features.iter().position(|f| f == "CTCF").unwrap();
    let z_row = t.chrom.iter().position(|c| c == "chrZ").unwrap();
    assert!(
        (0..z_row).all(|r| t.scores[r][ctcf] < t.scores[z_row][ctcf]),
        "chrZ's CTCF score is the largest"
    );
    let seen = check_get(&out, false, 200_000, 50);
    assert!(
        seen.written_max[ctcf] > 0.0 && seen.written_max[ctcf] < 1.0,
        "{seen:?}"
    );

    // The same dataset from the regions table alone.
    let mut reuse = with(args.clone(), "--peaks", None);
    reuse = with(reuse, "--motifs", None);
    reuse = with(reuse, "--motif-clusters", None);
    reuse = with(reuse, "--accessibility", None);
    reuse = with(reuse, "--accessibility", None);
    reuse.extend([
        "--reuse-regions".into(),
        dir.path().join("a.regions.tsv").display().to_string(),
    ]);
    let out2 = dir.path().join("b.safetensors");
    let o = run(&reuse, &out2);
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (
        TensorFile::open(&out).unwrap(),
        TensorFile::open(&out2).unwrap(),
    );
    for name in [
        "features",
        "region_mask",
        "tss_index",
        "region_index",
        "tss_slot",
        "strand",
        "expression",
    ] {
        let (x, y) = (a.require(name).unwrap(), b.require(name).unwrap());
        assert_eq!(x.shape, y.shape, "{name}");
        assert!(x.bytes == y.bytes, "{name} differs");
    }
    for suffix in ["samples.tsv", "regions.tsv"] {
        assert_eq!(
            std::fs::read(dir.path().join(format!("a.{suffix}"))).unwrap(),
            std::fs::read(dir.path().join(format!("b.{suffix}"))).unwrap(),
            "{suffix}"
        );
    }
    // The metadata differs only where it names the inputs.
    let (mut ma, mut mb) = (luminome_meta(&out), luminome_meta(&out2));
    assert_eq!(ma["motif"]["feature_scale"], "get");
    assert_eq!(mb["motif"], serde_json::json!({"feature_scale": "get"}));
    for m in [&mut ma, &mut mb] {
        let m = m.as_object_mut().unwrap();
        m.remove("motif");
        m.remove("region_sources");
        m.remove("reference");
        m.remove("regions_table");
        m.remove("samples_table");
    }
    assert_eq!(ma, mb);
}

/// `--feature-scale raw` is the default: the same outputs as a run without the flag, and no
/// `feature_scale` in the metadata.
#[test]
fn raw_is_the_default_and_leaves_the_outputs_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.safetensors");
    assert!(run(&base_args(), &a).status.success());
    let mut args = base_args();
    args.extend(["--feature-scale".into(), "raw".into()]);
    let b = dir.path().join("b.safetensors");
    let o = run(&args, &b);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("feature scale"));
    let (x, y) = (TensorFile::open(&a).unwrap(), TensorFile::open(&b).unwrap());
    for name in [
        "features",
        "region_mask",
        "tss_index",
        "region_index",
        "tss_slot",
        "strand",
        "expression",
    ] {
        assert!(
            x.require(name).unwrap().bytes == y.require(name).unwrap().bytes,
            "{name}"
        );
    }
    // Only the command line (and the file names it gives) tell the two runs apart.
    for (k, v) in x.metadata() {
        if k != "command_line" && k != "luminome" {
            assert_eq!(v, &y.metadata()[k], "{k}");
        }
    }
    let (ma, mb) = (
        &x.metadata()["luminome"],
        &y.metadata()["luminome"].replace("b.samples.tsv", "a.samples.tsv"),
    );
    assert_eq!(ma, &mb.replace("b.regions.tsv", "a.regions.tsv"));
    assert!(!ma.contains("feature_scale"));
    assert_eq!(
        RegionDataset::open(&a).unwrap().meta().feature_scale(),
        "raw"
    );
    for suffix in ["samples.tsv", "regions.tsv"] {
        assert_eq!(
            std::fs::read(dir.path().join(format!("a.{suffix}"))).unwrap(),
            std::fs::read(dir.path().join(format!("b.{suffix}"))).unwrap(),
            "{suffix}"
        );
    }
    // The features as written are the regions table's scores and normalised accessibility.
    let t = read_table(&dir.path().join("a.regions.tsv"));
    let rows = read_tsv(&dir.path().join("a.samples.tsv"));
    let (f, ri) = (
        x.require("features").unwrap(),
        x.require("region_index").unwrap(),
    );
    let (mut v, mut r) = (Vec::new(), Vec::new());
    f.extend_f32(0, &mut v);
    ri.extend_i64(0, &mut r);
    let nf = t.features.len();
    assert_eq!(&v[..nf], t.scores[r[0] as usize].as_slice());
    let regions = read_tsv(&dir.path().join("a.regions.tsv"));
    let acc: f32 = regions[r[0] as usize][&format!("acc:{}", rows[0]["cell_type"])]
        .parse()
        .unwrap();
    assert_eq!(v[nf], acc);
}
