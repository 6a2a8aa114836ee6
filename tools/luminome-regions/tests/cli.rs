//! End-to-end runs of the `luminome-regions` binary on the repository's test data (a 200 kb
//! slice of hg38 chr22 with K562 DNase peaks, accessibility, Vierstra/JASPAR motifs and expression).

mod common;

use common::*;

#[test]
fn builds_the_dataset_with_consistent_shapes_masks_and_tss_indices() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.safetensors");
    let o = run(&base_args(), &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("luminome-regions:"), "{}", stderr(&o));
    // -q: the same dataset, nothing on stderr.
    let quiet_out = dir.path().join("q.safetensors");
    let q = run(&[base_args(), vec!["-q".into()]].concat(), &quiet_out);
    assert!(q.status.success() && q.stderr.is_empty(), "{}", stderr(&q));
    let table = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(table("d.regions.tsv"), table("q.regions.tsv"));
    let tf = TensorFile::open(&out).unwrap();
    assert_eq!(tf.metadata()["kind"], "luminome.region_dataset");
    assert_eq!(tf.metadata()["format_version"], "1");
    let names: Vec<String> = serde_json::from_str(&tf.metadata()["feature_names"]).unwrap();
    assert_eq!(names.len(), 11);
    assert_eq!(names[0], "CTCF");
    assert_eq!(names[10], "accessibility");
    let features = tf.require("features").unwrap();
    assert_eq!(features.shape, &[18, 50, 11]); // 9 genes x 2 cell types
    assert_eq!(tf.require("region_mask").unwrap().shape, &[18, 50]);
    assert_eq!(tf.require("tss_index").unwrap().shape, &[18]);
    assert_eq!(tf.require("expression").unwrap().shape, &[18]);

    let samples = read_tsv(&dir.path().join("d.samples.tsv"));
    let regions = read_tsv(&dir.path().join("d.regions.tsv"));
    assert_eq!(samples.len(), 18);
    assert_eq!(regions.len(), 114);
    let mask = tf.require("region_mask").unwrap();
    let tss = tf.require("tss_index").unwrap();
    let rindex = tf.require("region_index").unwrap();
    let mut with_tss_region = 0;
    for (s, row) in samples.iter().enumerate() {
        let used: usize = row["regions_used"].parse().unwrap();
        let m = mask.row_bytes(s);
        assert!(m[..used].iter().all(|&x| x == 1) && m[used..].iter().all(|&x| x == 0));
        let mut t = Vec::new();
        tss.extend_i64(s, &mut t);
        let mut ri = Vec::new();
        rindex.extend_i64(s, &mut ri);
        // Regions are in genomic order.
        assert!(ri[..used].windows(2).all(|w| w[0] < w[1]));
        let tss_pos: u64 = row["tss"].parse().unwrap();
        if t[0] >= 0 {
            with_tss_region += 1;
            let r = &regions[ri[t[0] as usize] as usize];
            let (a, b): (u64, u64) = (r["start"].parse().unwrap(), r["end"].parse().unwrap());
            assert!(
                a <= tss_pos && tss_pos < b,
                "tss_index must point at the region containing the TSS"
            );
            assert_eq!(row["tss_region"], r["region"]);
        } else {
            assert_eq!(row["tss_region"], ".");
        }
        // The accessibility column is the cell type's normalised value of that region.
        let mut f = Vec::new();
        features.extend_f32(s, &mut f);
        let r0 = &regions[ri[0] as usize];
        let acc: f32 = r0[&format!("acc:{}", row["cell_type"])].parse().unwrap();
        assert!((f[10] - acc).abs() < 1e-4);
    }
    assert!(
        with_tss_region >= 4,
        "several of the 9 TSSs lie in a K562 peak"
    );

    // Expression joined by symbol, log1p by default: EIF3L in K562 has TPM 246.44.
    let eif3l = samples
        .iter()
        .find(|r| r["gene"] == "EIF3L" && r["cell_type"] == "K562")
        .unwrap();
    let e: f64 = eif3l["expression"].parse().unwrap();
    assert!((e - 246.44f64.ln_1p()).abs() < 1e-9);
    let mut ev = Vec::new();
    tf.require("expression")
        .unwrap()
        .extend_f32(eif3l["sample"].parse().unwrap(), &mut ev);
    assert!((ev[0] as f64 - e).abs() < 1e-5);

    // The reader the model tools use sees the same dataset.
    let ds = luminome_io::region_dataset::RegionDataset::open(&out).unwrap();
    assert_eq!((ds.len(), ds.n_regions(), ds.n_features()), (18, 50, 11));
    assert_eq!(ds.feature_names(), names.as_slice());
    assert_eq!(ds.cell_types(), ["K562", "GM12878"]);
    let rows = ds.read_samples().unwrap();
    let i: usize = eif3l["sample"].parse().unwrap();
    assert_eq!(
        (rows[i].gene.as_str(), rows[i].expression),
        ("EIF3L", Some(e))
    );
    let b = ds.batch(&[i]).unwrap();
    let mut f = Vec::new();
    features.extend_f32(i, &mut f);
    assert_eq!(b.features, f);
    assert_eq!(b.expression.unwrap()[0], ev[0]);
}

#[test]
fn a_known_ctcf_site_scores_for_ctcf_in_both_motif_sets() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.safetensors");
    assert!(run(&base_args(), &out).status.success());
    let regions = read_tsv(&dir.path().join("d.regions.tsv"));
    let find = |rows: &[HashMap<String, String>]| {
        rows.iter()
            .find(|r| {
                r["start"] == CTCF_REGION.0.to_string() && r["end"] == CTCF_REGION.1.to_string()
            })
            .cloned()
            .expect("the CTCF peak is a region")
    };
    let ctcf: f64 = find(&regions)["CTCF"].parse().unwrap();
    assert!(ctcf > 0.0);
    // CTCF hits are specific: most regions have none.
    let zero = regions.iter().filter(|r| r["CTCF"] == "0").count();
    assert!(zero > regions.len() / 2, "{zero} of {}", regions.len());

    let args = with(
        base_args(),
        "--motifs",
        Some(&data("motifs/jaspar_small.jaspar")),
    );
    let args = with(args, "--motif-clusters", None);
    let out2 = dir.path().join("j.safetensors");
    let o = run(&args, &out2);
    assert!(o.status.success(), "{}", stderr(&o));
    let jrows = read_tsv(&dir.path().join("j.regions.tsv"));
    let v: f64 = find(&jrows)["MA0139.2 CTCF"].parse().unwrap();
    assert!(v > 0.0);
}

#[test]
fn reused_region_table_gives_the_same_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.safetensors");
    assert!(run(&base_args(), &out).status.success());
    let args = with(base_args(), "--peaks", None);
    let args = with(args, "--motifs", None);
    let args = with(args, "--motif-clusters", None);
    let mut args = with(args, "--accessibility", None);
    args = with(args, "--accessibility", None);
    args.push("--reuse-regions".into());
    args.push(
        dir.path()
            .join("a.regions.tsv")
            .to_string_lossy()
            .into_owned(),
    );
    let out2 = dir.path().join("b.safetensors");
    let o = run(&args, &out2);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = TensorFile::open(&out).unwrap();
    let b = TensorFile::open(&out2).unwrap();
    for name in [
        "features",
        "region_mask",
        "tss_index",
        "region_index",
        "expression",
    ] {
        let (x, y) = (a.require(name).unwrap(), b.require(name).unwrap());
        assert_eq!(x.shape, y.shape, "{name}");
        if name == "features" {
            let (mut u, mut v) = (Vec::new(), Vec::new());
            for s in 0..x.shape[0] {
                x.extend_f32(s, &mut u);
                y.extend_f32(s, &mut v);
            }
            assert!(u
                .iter()
                .zip(&v)
                .all(|(p, q)| (p - q).abs() <= 1e-4 * p.abs().max(1.0)));
        } else {
            assert_eq!(x.bytes, y.bytes, "{name}");
        }
    }
}

#[test]
fn fragments_and_counts_tables_are_counted_per_region() {
    let dir = tempfile::tempdir().unwrap();
    // Region 0 is [2369, 2604): fragment (2400,2500) puts 2 insertions inside, (2300,2450) one.
    let frags = dir.path().join("atac_fragments.tsv");
    std::fs::write(&frags, "chr22_slice\t2400\t2500\tAAAC-1\t3\nchr22_slice\t2300\t2450\tAAAG-1\t1\nchrX\t1\t50\tA-1\t1\n").unwrap();
    let counts = dir.path().join("counts.tsv");
    std::fs::write(
        &counts,
        "chr22_slice\t2369\t2604\t7\nchr22_slice\t2860\t3014\t5\n",
    )
    .unwrap();
    let mut args = with(
        base_args(),
        "--accessibility",
        Some(&format!("K562={}", frags.display())),
    );
    args = with(args, "--expression", None);
    args = with(args, "--expression", None);
    let i = args.iter().rposition(|a| a == "--accessibility").unwrap();
    args[i + 1] = format!("GM12878=counts:{}", counts.display());
    let out = dir.path().join("d.safetensors");
    let o = run(&args, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let regions = read_tsv(&dir.path().join("d.regions.tsv"));
    assert_eq!(regions[0]["acc_raw:K562"], "3");
    assert_eq!(regions[0]["acc_raw:GM12878"], "7");
    assert_eq!(regions[1]["acc_raw:GM12878"], "5");
    assert_eq!(regions[2]["acc_raw:GM12878"], "0");
}

#[test]
fn peaks_are_called_from_coverage_when_none_are_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.safetensors");
    let o = run(&with(base_args(), "--peaks", None), &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("called"));
    let regions = read_tsv(&dir.path().join("d.regions.tsv"));
    assert!(regions.len() > 10, "{}", regions.len());
    for r in &regions {
        let (s, e): (u64, u64) = (r["start"].parse().unwrap(), r["end"].parse().unwrap());
        assert!(e - s >= 150);
    }
}

#[test]
fn python_can_open_the_outputs() {
    if !luminome_io::python_probe::python_can_import(
        "numpy, safetensors.numpy",
        "python_can_open_the_outputs",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.safetensors");
    assert!(run(&base_args(), &out).status.success());
    let script = format!(
        "import json, csv, safetensors.numpy as st\n\
         from safetensors import safe_open\n\
         d = st.load_file({out:?})\n\
         assert d['features'].shape == (18, 50, 11), d['features'].shape\n\
         assert d['region_mask'].dtype.name == 'uint8'\n\
         with safe_open({out:?}, 'np') as f: meta = f.metadata()\n\
         assert json.loads(meta['feature_names'])[-1] == 'accessibility'\n\
         rows = list(csv.DictReader(open({samples:?}), delimiter='\\t'))\n\
         assert len(rows) == 18\n",
        out = out.to_string_lossy(),
        samples = dir.path().join("d.samples.tsv").to_string_lossy()
    );
    let o = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_gene_without_regions_is_kept_with_a_full_mask_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut genes = std::fs::read_to_string(data("chr22_slice/genes_tss.bed")).unwrap();
    // TSS 140,000 with a 100 bp window: no peak of the slice lies within 50 bp of it.
    genes.push_str("chr22_slice\t139750\t140250\tLONELY\t0\t+\tENSG_LONELY\tprotein_coding\n");
    let g = temp_file(dir.path(), "genes.bed", &genes);
    let args = with(base_args(), "--genes", Some(g.to_str().unwrap()));
    let args = with(args, "--window", Some("100"));
    let mut args = with(args, "--expression", None);
    args = with(args, "--expression", None);
    let out = dir.path().join("d.safetensors");
    let o = run(&args, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("genes have no region in their 100 bp window"),
        "{}",
        stderr(&o)
    );
    let samples = read_tsv(&dir.path().join("d.samples.tsv"));
    let tf = TensorFile::open(&out).unwrap();
    let s = samples.iter().position(|r| r["gene"] == "LONELY").unwrap();
    assert_eq!(samples[s]["regions_used"], "0");
    assert!(tf
        .require("region_mask")
        .unwrap()
        .row_bytes(s)
        .iter()
        .all(|&m| m == 0));
    let mut t = Vec::new();
    tf.require("tss_index").unwrap().extend_i64(s, &mut t);
    assert_eq!(t, vec![-1]);
}

#[test]
fn absurdly_wide_peaks_are_reported_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut peaks = String::from("chr22_slice\t0\t150000\tartefact\t0\t.\t1\t1\t1\t10\n");
    peaks.push_str(&std::fs::read_to_string(data("chr22_slice/peaks.narrowPeak")).unwrap());
    let p = temp_file(dir.path(), "with_artefact.narrowPeak", &peaks);
    let out = dir.path().join("d.safetensors");
    let o = run(
        &with(base_args(), "--peaks", Some(p.to_str().unwrap())),
        &out,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("with_artefact.narrowPeak: line 1") && err.contains("150000 bp wide"),
        "{err}"
    );
    assert_eq!(read_tsv(&dir.path().join("d.regions.tsv")).len(), 114);
}

#[test]
fn bigwig_and_bedgraph_of_the_same_coverage_agree() {
    let dir = tempfile::tempdir().unwrap();
    let bw = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/acc.K562.slice.bw");
    let out_bg = dir.path().join("bg.safetensors");
    assert!(run(&base_args(), &out_bg).status.success());
    let args = with(
        base_args(),
        "--accessibility",
        Some(&format!("K562={}", bw.display())),
    );
    let out_bw = dir.path().join("bw.safetensors");
    let o = run(&args, &out_bw);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = read_tsv(&dir.path().join("bg.regions.tsv"));
    let b = read_tsv(&dir.path().join("bw.regions.tsv"));
    assert_eq!(a.len(), b.len());
    assert!(a
        .iter()
        .zip(&b)
        .all(|(x, y)| x["acc_raw:K562"] == y["acc_raw:K562"]));
    assert!(a.iter().any(|x| x["acc_raw:K562"] != "0"));
}

/// Slot of the TSS among the regions (its region's, or the first region after it) and the
/// gene's strand, checked against the samples and regions tables.
#[test]
fn tss_slots_and_strands_place_every_region_relative_to_the_tss() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.safetensors");
    let o = run(&base_args(), &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let tf = TensorFile::open(&out).unwrap();
    let samples = read_tsv(&dir.path().join("d.samples.tsv"));
    let regions = read_tsv(&dir.path().join("d.regions.tsv"));
    let (slot, strand, tss_index, rindex) = (
        tf.require("tss_slot").unwrap(),
        tf.require("strand").unwrap(),
        tf.require("tss_index").unwrap(),
        tf.require("region_index").unwrap(),
    );
    let mut between = 0;
    for (s, row) in samples.iter().enumerate() {
        let (mut sl, mut ti, mut ri) = (Vec::new(), Vec::new(), Vec::new());
        slot.extend_i64(s, &mut sl);
        tss_index.extend_i64(s, &mut ti);
        rindex.extend_i64(s, &mut ri);
        let expected_strand: i8 = if row["strand"] == "-" { -1 } else { 1 };
        assert_eq!(strand.row_bytes(s)[0] as i8, expected_strand);
        if ti[0] >= 0 {
            assert_eq!(sl[0], ti[0]);
            continue;
        }
        between += 1;
        let tss: u64 = row["tss"].parse().unwrap();
        let used: usize = row["regions_used"].parse().unwrap();
        let ends_before = ri[..used]
            .iter()
            .filter(|&&r| regions[r as usize]["end"].parse::<u64>().unwrap() <= tss)
            .count();
        assert_eq!(sl[0], ends_before as i64, "sample {s}");
    }
    assert!(between > 0, "some TSSs lie between regions");
}

/// A table with one column per cell type, read per cell type by column name or as a matrix
/// whose columns are named after the cell types; a column that does not exist is refused with
/// the columns that do.
#[test]
fn expression_columns_per_cell_type_and_expression_matrices() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("matrix.tsv");
    std::fs::write(
        &matrix,
        "gene_id\tK562\tGM12878\tHeLa\nENSG00000100116.9\t42.91\t88.9699\t1\nENSG00000189060\t3\t1.6455\t1\n",
    )
    .unwrap();
    let base: Vec<String> = {
        // Drop both --expression flags of the standard run.
        let mut a = with(base_args(), "--expression", None);
        a = with(a, "--expression", None);
        a.extend(["--expression-gene-column".into(), "gene_id".into()]);
        a.extend(["--keep-missing-expression".into()]);
        a
    };
    let expression_of = |out: &Path, gene: &str, cell: &str| -> String {
        let samples = read_tsv(&out.with_file_name(format!(
            "{}.samples.tsv",
            out.file_stem().unwrap().to_string_lossy()
        )));
        samples
            .iter()
            .find(|r| r["gene"] == gene && r["cell_type"] == cell)
            .unwrap()["expression"]
            .clone()
    };
    // Columns named per cell type (one of them by 1-based index); gene ids with and without a
    // version suffix match the genes' ids.
    let mut args = base.clone();
    args.extend([
        "--expression".into(),
        format!("K562={}:K562", matrix.display()),
        "--expression".into(),
        format!("GM12878={}:3", matrix.display()),
    ]);
    let a = dir.path().join("a.safetensors");
    let o = run(&args, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    let gcat_k562: f64 = expression_of(&a, "GCAT", "K562").parse().unwrap();
    assert!((gcat_k562 - 42.91f64.ln_1p()).abs() < 1e-9);
    let h1f0_gm: f64 = expression_of(&a, "H1F0", "GM12878").parse().unwrap();
    assert!((h1f0_gm - 1.6455f64.ln_1p()).abs() < 1e-9);
    // The same as a matrix: identical tensors.
    let mut args = base.clone();
    args.extend(["--expression-matrix".into(), matrix.display().to_string()]);
    let b = dir.path().join("b.safetensors");
    let o = run(&args, &b);
    assert!(o.status.success(), "{}", stderr(&o));
    let tensors = |p: &Path| {
        let tf = TensorFile::open(p).unwrap();
        let mut v = Vec::new();
        for s in 0..18 {
            tf.require("expression").unwrap().extend_f32(s, &mut v);
        }
        v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    assert_eq!(tensors(&a), tensors(&b));
    // A column that is not there.
    let mut args = base;
    args.extend([
        "--expression".into(),
        format!("K562={}:K-562", matrix.display()),
        "--expression".into(),
        format!("GM12878={}:GM12878", matrix.display()),
    ]);
    let c = dir.path().join("c.safetensors");
    let o = run(&args, &c);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("matrix.tsv: line 1")
            && e.contains(
                "no column named \"K-562\"; the columns are: gene_id, K562, GM12878, HeLa"
            ),
        "{e}"
    );
    assert!(!c.exists());
}

/// --tile-step: windows tiled along the reference instead of genes (no expression), tiles with
/// no region in their window left out.
#[test]
fn tiles_along_the_reference_make_pretraining_windows() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = with(base_args(), "--expression", None);
    args = with(args, "--expression", None);
    args = with(args, "--genes", None);
    args = with(args, "--bed-tss", None);
    args = with(args, "--window", Some("20000"));
    args.extend(["--tile-step".into(), "10000".into()]);
    let out = dir.path().join("t.safetensors");
    let o = run(&args, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let tf = TensorFile::open(&out).unwrap();
    assert!(tf.tensor("expression").is_none());
    let samples = read_tsv(&dir.path().join("t.samples.tsv"));
    // 200 kb slice, a tile every 10 kb: at most 20 per cell type, the empty ones left out.
    assert!(
        samples.len() > 10 && samples.len() <= 40,
        "{}",
        samples.len()
    );
    for row in &samples {
        let tss: u64 = row["tss"].parse().unwrap();
        assert_eq!(tss % 10000, 5000, "{row:?}");
        assert_eq!(
            row["gene"],
            format!("chr22_slice:{}-{}", tss - 5000, tss + 5000)
        );
        assert!(row["regions_used"].parse::<usize>().unwrap() > 0);
        assert_eq!(row["strand"], ".");
    }
    let meta: serde_json::Value = serde_json::from_str(&tf.metadata()["luminome"]).unwrap();
    assert_eq!(meta["genes"], "tiles every 10000 bp");
}

/// `--help` starts with what a run needs (inputs, then outputs); the ~30 tuning flags follow.
#[test]
fn help_lists_inputs_and_outputs_before_the_tuning_options() {
    luminome_cli::assert_help_starts_with(
        env!("CARGO_BIN_EXE_luminome-regions"),
        &["Options", "Inputs", "Outputs", "Motif options"],
    );
}
