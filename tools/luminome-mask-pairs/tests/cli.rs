//! luminome-mask-pairs end to end: what each input mode writes, the masking properties the
//! bi-strand model relies on, and the variant rules.

mod common;

use std::collections::HashMap;

use common::*;
use luminome_io::pair_dataset::{Pairing, IGNORE_INDEX};

#[test]
fn a_genome_and_its_complement_are_masked_at_the_same_positions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.safetensors");
    let o = run(&[
        "--fasta",
        &test_data("ecoli/ecoli_50kb.fa.gz"),
        "--window",
        "512",
        "--bert-replacement",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (ds, index) = open(&out);
    // 50,000 bases: 97 full windows and a padded tail.
    assert_eq!((ds.len(), ds.length()), (98, 512));
    assert_eq!(ds.meta().pairing, Pairing::Complement);
    assert_eq!(region(&index[1]), "NC_000913.3:513-1024");
    assert_eq!(region(&index[97]), "NC_000913.3:49665-50000");
    let b = ds.batch(&(0..98).collect::<Vec<_>>()).unwrap();
    let (mut masked, mut maskable) = (0usize, 0usize);
    for i in 0..b.ids_a.len() {
        let m = b.mask_positions[i] == 1;
        // Labels on both strands exactly at the masked positions.
        assert_eq!(b.labels_a[i] != IGNORE_INDEX, m);
        assert_eq!(b.labels_b[i] != IGNORE_INDEX, m);
        if b.attention_mask[i] == 1 {
            maskable += 1;
        }
        if m {
            masked += 1;
            // The base pair hidden from both strands: the labels pair up, and a strand shows
            // [MASK] exactly when its partner does.
            assert_eq!(b.labels_a[i] + b.labels_b[i], 13);
            assert_eq!(b.ids_a[i] == 3, b.ids_b[i] == 3);
        } else if b.attention_mask[i] == 1 {
            // Elsewhere B is A's complement, index for index.
            assert_eq!(b.ids_a[i] + b.ids_b[i], 13, "position {i}");
        } else {
            assert_eq!((b.ids_a[i], b.ids_b[i]), (0, 0), "padding");
        }
    }
    let share = masked as f64 / maskable as f64;
    assert!((share - 0.15).abs() < 0.005, "masked share {share}");
    // Same seed, same bytes; another seed, other masks.
    let again = dir.path().join("q.safetensors");
    let o = run(&[
        "--fasta",
        &test_data("ecoli/ecoli_50kb.fa.gz"),
        "--window",
        "512",
        "--bert-replacement",
        "-o",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let tensors = |p: &std::path::Path| {
        let v = std::fs::read(p).unwrap();
        v[8 + u64::from_le_bytes(v[..8].try_into().unwrap()) as usize..].to_vec()
    };
    assert_eq!(tensors(&out), tensors(&again));
}

#[test]
fn snv_windows_centre_the_variant_and_mask_only_its_site() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snv.safetensors");
    let o = run(&[
        "--reference",
        &test_data("celegans/celegans_small.fa"),
        "--variants",
        &test_data("celegans/celegans_small.snv.vcf"),
        "--window",
        "128",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (ds, index) = open(&out);
    assert_eq!(ds.len(), 324);
    let first = &index[0];
    let v = first.variant.as_ref().unwrap();
    assert_eq!(
        (
            v.chrom.as_str(),
            v.pos,
            v.reference.as_str(),
            v.alternate.as_str()
        ),
        ("I", 3080, "A", "T")
    );
    assert_eq!(first.site, Some(64));
    assert_eq!(region(first), "I:3016-3143");
    assert!(index.iter().all(|r| r.variant.as_ref().unwrap().ref_match));
    let b = ds.batch(&[0]).unwrap();
    let masked: Vec<usize> = (0..128).filter(|&i| b.mask_positions[i] == 1).collect();
    assert_eq!(masked, [64]);
    // The reference base at the site is the label of A; B carries its complement.
    assert_eq!((b.labels_a[64], b.labels_b[64]), (5, 8));
    assert_eq!((b.ids_a[64], b.ids_b[64]), (3, 3));
}

#[test]
fn variant_rules_split_skip_flag_and_pad_and_count_each() {
    let dir = tempfile::tempdir().unwrap();
    let (reference, vcf) = variant_inputs(dir.path());
    let out = dir.path().join("v.safetensors");
    let o = run(&[
        "--reference",
        reference.to_str().unwrap(),
        "--variants",
        vcf.to_str().unwrap(),
        "--window",
        "16",
        "--pairing",
        "alleles",
        "--keep-info",
        "AF",
        "-o",
        out.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    let (ds, index) = open(&out);
    let counts = &ds.meta().counts;
    let c = |k: &str| counts.get(k).copied().unwrap_or(0);
    // rs1 split into two alleles, rs4 (REF C where the reference has A: flagged), rs6 padded.
    assert_eq!(c("alleles_written"), 4, "{counts:?}");
    assert_eq!(c("indel_or_mnp_alleles_left_out"), 1);
    assert_eq!(c("non_acgt_alleles_left_out"), 1);
    assert_eq!(c("symbolic_alleles_left_out"), 1);
    assert_eq!(c("reference_n_at_site_left_out"), 1);
    assert_eq!(c("ref_mismatch_flagged"), 1);
    assert_eq!(c("padded_windows"), 1);
    assert!(
        e.contains("REF alleles disagree") && e.contains("line 9"),
        "{e}"
    );
    let by_id: HashMap<(String, String), &luminome_io::pair_dataset::PairIndexRow> = index
        .iter()
        .map(|r| {
            let v = r.variant.as_ref().unwrap();
            ((v.id.clone(), v.alternate.clone()), r)
        })
        .collect();
    assert_eq!(by_id[&("rs1".into(), "T".into())].info, ["0.1,0.2"]);
    assert!(
        !by_id[&("rs4".into(), "G".into())]
            .variant
            .as_ref()
            .unwrap()
            .ref_match
    );
    // II:2 in a 16-base window: 7 padded positions before the contig start, site still at 8.
    let rs6 = by_id[&("rs6".into(), "C".into())];
    assert_eq!((region(rs6).as_str(), rs6.site), ("II:1-9", Some(8)));
    let b = ds.batch(&[rs6.record as usize]).unwrap();
    assert_eq!(&b.attention_mask[..8], &[0, 0, 0, 0, 0, 0, 0, 1]);
    // Alleles pairing: A carries REF, B the ALT, at the masked site.
    assert_eq!((b.labels_a[8], b.labels_b[8]), (8, 6));
    // --ref-mismatch skip leaves rs4 out.
    let out2 = dir.path().join("w.safetensors");
    let o = run(&[
        "--reference",
        reference.to_str().unwrap(),
        "--variants",
        vcf.to_str().unwrap(),
        "--window",
        "16",
        "--ref-mismatch",
        "skip",
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(open(&out2).0.len(), 3);
}

#[test]
fn paired_fasta_files_and_paired_records_give_the_same_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.fa", ">r1\nACGTACGTAC\n>r2\nGGGG\n");
    let b = write(dir.path(), "b.fa", ">r1\nACGAACGTAC\n>r2\nGGCG\n");
    let p = write(
        dir.path(),
        "p.fa",
        ">r1/1\nACGTACGTAC\n>r1/2\nACGAACGTAC\n>r2/a\nGGGG\n>r2/b\nGGCG\n",
    );
    let out = |n: &str| dir.path().join(n).display().to_string();
    let o = run(&[
        "--fasta-a",
        a.to_str().unwrap(),
        "--fasta-b",
        b.to_str().unwrap(),
        "--window",
        "8",
        "-o",
        &out("f.safetensors"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "--paired",
        p.to_str().unwrap(),
        "--window",
        "8",
        "-o",
        &out("p.safetensors"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (f, fi) = open(std::path::Path::new(&out("f.safetensors")));
    let (q, _) = open(std::path::Path::new(&out("p.safetensors")));
    assert_eq!(f.meta().pairing, Pairing::Given);
    assert_eq!(f.len(), 3);
    assert_eq!(region(&fi[2]), "r2:1-4");
    let all = [0, 1, 2];
    let (x, y) = (f.batch(&all).unwrap(), q.batch(&all).unwrap());
    assert_eq!(
        (x.ids_a, x.ids_b, x.mask_positions),
        (y.ids_a, y.ids_b, y.mask_positions)
    );
}

#[test]
fn outputs_open_in_python() {
    if !luminome_io::python_probe::python_can_import("numpy, safetensors", "outputs_open_in_python")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.safetensors");
    let o = run(&[
        "--fasta",
        &test_data("celegans/celegans_small.fa"),
        "--window",
        "256",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let script = format!(
        "from safetensors.numpy import load_file\nimport numpy as np, json\nfrom safetensors import safe_open\nd = load_file('{0}')\nm = d['mask_positions'] == 1\nassert d['labels_a'].dtype == np.int8 and (d['labels_a'][~m] == -100).all()\nassert ((d['ids_a'] == 3) == m).all() and ((d['ids_b'] == 3) == m).all()\nmeta = json.loads(safe_open('{0}', 'np').metadata()['luminome'])\nassert meta['pairing'] == 'complement', meta\nprint(d['ids_a'].shape)",
        out.display()
    );
    let o = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "(158, 256)");
}

/// A row's window as the index's 1-based `window_region` (samtools/IGV style).
fn region(row: &luminome_io::pair_dataset::PairIndexRow) -> String {
    row.window.as_ref().unwrap().region()
}
