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
    let ok = Command::new("python3")
        .args(["-c", "import numpy, safetensors.numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!(
            "note: python3 with numpy + safetensors not available; skipping the Python check"
        );
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
