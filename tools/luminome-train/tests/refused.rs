//! Bad input refused (clear message, non-zero exit, nothing half-written), and runs that stop
//! cleanly: divergence, a device the build lacks.

mod common;

use common::*;

#[test]
fn classify_refuses_a_dataset_without_labels() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("unlabelled.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unlabelled.safetensors") && stderr(&o).contains("no labels"),
        "{}",
        stderr(&o)
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn labels_outside_the_declared_classes_are_refused_with_the_record() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("train.safetensors"),
            "--dev",
            &d.path("three.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("three.safetensors") && e.contains("record 6") && e.contains("label 2"),
        "{e}"
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn init_from_a_classifier_checkpoint_is_refused() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "cls",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("clf"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "cls",
            "--init",
            &d.path("clf/best.safetensors"),
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("masked-LM checkpoint") && stderr(&o).contains("classifier"),
        "{}",
        stderr(&o)
    );
    nothing_written(&d.root.join("out"));
    // A dataset is not a checkpoint either.
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "cls",
            "--init",
            &d.path("train.safetensors"),
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("not a Luminome checkpoint"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_checkpoint_with_another_vocabulary_is_refused() {
    let d = data();
    let o = run_s(&with(
        &[
            "mlm",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("mlm"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    // The same records under a vocabulary with one more token.
    let mut tok = nucleotide_tokenizer();
    tok.vocab.push("X".into());
    let dest = d.root.join("other_vocab.safetensors");
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.clone(),
        tokenizer: tok,
        max_length: Some(24),
        has_labels: true,
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "test".into(),
        tool_version: "0".into(),
        command_line: String::new(),
    })
    .unwrap();
    for i in 0..8u64 {
        let mut ids = encode(b"ACGTACGT");
        ids.resize(24, 0);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: Some((i % 2) as i64),
            index: IndexRow {
                record: i,
                shard: 0,
                name: format!("r{i}"),
                interval: None,
                seq_length: 8,
                window_offset: 0,
                window_length: 8,
                strand: '+',
            },
        })
        .unwrap();
    }
    w.finish().unwrap();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "gated",
            "--init",
            &d.path("mlm/best.safetensors"),
            "--train",
            &dest.display().to_string(),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("tokenized differently"),
        "{}",
        stderr(&o)
    );
    nothing_written(&d.root.join("out"));
}

#[test]
fn rows_longer_than_the_model_are_refused() {
    let d = data();
    let o = run_s(&with(
        &[
            "mlm",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("mlm"),
        ],
        TINY,
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "max",
            "--init",
            &d.path("mlm/best.safetensors"),
            "--train",
            &d.path("long.safetensors"),
            "-o",
            &d.path("out"),
        ],
        TINY,
    ));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("long.safetensors") && e.contains("40 tokens") && e.contains("max length 24"),
        "{e}"
    );
    assert!(!d.root.join("out").exists());
}

#[test]
fn a_diverging_run_stops_on_nan_with_a_clear_message() {
    let d = data();
    let o = run_s(&with(
        &[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &d.path("train.safetensors"),
            "-o",
            &d.path("out"),
            "--lr",
            "1e38",
            "--clip-norm",
            "0",
        ],
        &[
            "--d-model",
            "16",
            "--layers",
            "1",
            "--heads",
            "2",
            "--ffn",
            "32",
            "--steps",
            "6",
            "--eval-every",
            "3",
            "--warmup",
            "0",
            "--quiet",
        ],
    ));
    assert!(!o.status.success());
    // Stopped before its first checkpoint: the message names the folder, and the run leaves
    // nothing (it was a metrics.tsv alone in a folder this run created).
    let e = stderr(&o);
    let out = d.path("out");
    assert!(
        e.contains("NaN") && e.contains(&format!("nothing was written to {out}")),
        "{e}"
    );
    assert!(!Path::new(&out).exists(), "{e}");
}

#[test]
fn cuda_in_a_cpu_build_is_a_clear_error() {
    if cfg!(feature = "cuda") {
        return;
    }
    let d = data();
    let o = run(&[
        "classify",
        "--adapter",
        "cls",
        "--train",
        &d.path("train.safetensors"),
        "-o",
        &d.path("out"),
        "--device",
        "cuda",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no CUDA support"), "{}", stderr(&o));
    assert!(!d.root.join("out").exists());
}

#[test]
fn training_flags_out_of_range_are_refused_by_name_before_anything_is_written() {
    let d = data();
    let train = d.path("train.safetensors");
    for (flag, value) in [
        ("--eval-batch-size", "0"),
        ("--batch-size", "0"),
        ("--grad-accum", "0"),
        ("--lr", "-1"),
        ("--lr", "nan"),
        ("--clip-norm", "nan"),
        ("--clip-norm", "-1"),
        ("--weight-decay", "nan"),
        ("--min-lr-ratio", "2"),
        ("--min-lr-ratio", "nan"),
        ("--stop-after-steps", "0"),
    ] {
        let out = d.root.join("out");
        let o = run(&[
            "classify",
            "--adapter",
            "mean",
            "--train",
            &train,
            "--dev",
            &train,
            "--no-kmer-floor",
            "-o",
            out.to_str().unwrap(),
            &format!("{flag}={value}"),
        ]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {e}");
        assert!(e.contains(flag), "{flag} {value}: {e}");
        assert!(!out.exists(), "{flag} {value}: output folder created");
    }
}

/// `src` with tensor `name`'s shape and bytes replaced by `change` (metadata and the other
/// tensors kept).
fn rewrite_tensor(
    src: &Path,
    dest: &Path,
    name: &str,
    change: impl Fn(&[usize], &[u8]) -> (Vec<usize>, Vec<u8>),
) {
    let bytes = std::fs::read(src).unwrap();
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let metadata: std::collections::BTreeMap<String, String> = header
        .metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor(name).unwrap();
    let (shape, data) = change(t.shape(), t.data());
    let tensors: Vec<(String, safetensors::tensor::TensorView)> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| {
            if n != name {
                return (n, t);
            }
            let v = safetensors::tensor::TensorView::new(t.dtype(), shape.clone(), &data);
            (n, v.unwrap())
        })
        .collect();
    luminome_io::tensorfile::write_tensors(dest, &tensors, &metadata)
        .unwrap()
        .commit()
        .unwrap();
}

/// `src` with tensor `name` cut to its first `rows` rows.
fn with_short_tensor(src: &Path, dest: &Path, name: &str, rows: usize) {
    rewrite_tensor(src, dest, name, |shape, data| {
        let row = data.len() / shape[0];
        let mut shape = shape.to_vec();
        shape[0] = rows;
        (shape, data[..rows * row].to_vec())
    });
}

#[test]
fn a_dataset_with_fewer_labels_or_mask_rows_than_records_is_refused_on_open() {
    let d = data();
    for tensor in ["labels", "attention_mask"] {
        let short = d.root.join(format!("short_{tensor}.safetensors"));
        with_short_tensor(&d.root.join("train.safetensors"), &short, tensor, 10);
        std::fs::copy(
            d.root.join("train.index.tsv"),
            d.root.join(format!("short_{tensor}.index.tsv")),
        )
        .unwrap();
        let out = d.root.join("out");
        let o = run(&[
            "classify",
            "--adapter",
            "mean",
            "--train",
            short.to_str().unwrap(),
            "--no-kmer-floor",
            "-o",
            out.to_str().unwrap(),
        ]);
        let says = format!("short_{tensor}.safetensors: {tensor} has shape [10");
        assert_refused_before_any_output(&o, &out, &says);
    }
}

#[test]
fn a_run_folder_holding_the_training_set_as_a_run_file_is_refused() {
    // train --train run/best.safetensors -o run would replace its own input.
    let d = data();
    let run_dir = d.root.join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let input = run_dir.join("best.safetensors");
    std::fs::copy(d.root.join("train.safetensors"), &input).unwrap();
    std::fs::copy(
        d.root.join("train.index.tsv"),
        run_dir.join("best.index.tsv"),
    )
    .unwrap();
    let before = std::fs::read(&input).unwrap();
    let o = run(&[
        "classify",
        "--adapter",
        "mean",
        "--train",
        input.to_str().unwrap(),
        "--no-kmer-floor",
        "--steps",
        "2",
        "-o",
        run_dir.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("would destroy the input"), "{e}");
    // It reads as English: the input of this run, not "the input input".
    assert!(
        e.contains("is the input of this run, ") && !e.contains("input input"),
        "{e}"
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

/// `src` with byte `at` of tensor `name` set to `value`.
fn with_byte(src: &Path, dest: &Path, name: &str, at: usize, value: u8) {
    rewrite_tensor(src, dest, name, |shape, data| {
        let mut data = data.to_vec();
        data[at] = value;
        (shape.to_vec(), data)
    });
}

/// A bad value anywhere in a paired dataset is refused on open, before any training, naming the
/// file, record and position — not only when a drawn batch happens to hold it.
#[test]
fn a_paired_dataset_with_a_bad_value_anywhere_is_refused_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.safetensors");
    let seqs: Vec<Vec<u8>> = (0..40).map(|i| b"ACGTTGCAAC".repeat(2 + i % 3)).collect();
    luminome_engine::testing::write_pair_dataset(&good, &seqs, 0.15, 1).unwrap();
    // Record 37 (row length 40), position 5.
    let at = 37 * 40 + 5;
    for (tensor, value, says) in [
        (
            "ids_b",
            200u8,
            "ids_b holds 200, a token id outside the vocabulary",
        ),
        (
            "labels_a",
            99u8,
            "labels_a holds 99, a label that is neither -100 nor a token id",
        ),
        (
            "attention_mask",
            7u8,
            "attention_mask holds 7, a mask flag other than 0 or 1",
        ),
    ] {
        let bad = dir.path().join(format!("bad_{tensor}.safetensors"));
        with_byte(&good, &bad, tensor, at, value);
        std::fs::copy(
            dir.path().join("good.index.tsv"),
            dir.path().join(format!("bad_{tensor}.index.tsv")),
        )
        .unwrap();
        let out = dir.path().join("out");
        let o = run(&[
            "bistrand",
            "--train",
            bad.to_str().unwrap(),
            "--d-model",
            "16",
            "--layers",
            "1",
            "--steps",
            "1",
            "--batch-size",
            "2",
            "-o",
            out.to_str().unwrap(),
        ]);
        let says = format!("bad_{tensor}.safetensors: record 37, position 5: {says}");
        assert_refused_before_any_output(&o, &out, &says);
    }
}

/// Exit status 1, `says` in the message, and no run folder.
fn assert_refused_before_any_output(o: &std::process::Output, out: &Path, says: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains(says), "{says}\n{e}");
    assert!(!out.exists(), "{e}");
}
