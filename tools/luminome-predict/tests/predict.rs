//! luminome-predict end to end: the forward pass against the PyTorch reference, the TSV and
//! metrics outputs, and refused inputs.

mod common;

use std::path::Path;
use std::process::Command;

use candle_core::Device;
use common::*;
use luminome_engine::models::classifier::ClassifierConfig;
use luminome_engine::models::token::predict_probs;
use luminome_metrics::softmax;
use luminome_metrics::ClassificationMetrics;

type ClassifierInput = luminome_engine::models::token::ClassifierInput<ClassifierConfig>;

/// Runs predict with `checkpoints` on `ds`, writing `out` and `metrics`, then `extra` flags.
fn predict_with_metrics(
    checkpoints: &[&Path],
    ds: &Path,
    out: &Path,
    metrics: &Path,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["--checkpoint"];
    args.extend(checkpoints.iter().map(|c| c.to_str().unwrap()));
    args.extend([
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--metrics",
        metrics.to_str().unwrap(),
    ]);
    args.extend(extra);
    predict(&args)
}

fn fixture_dataset(dir: &Path, max_length: usize) -> std::path::PathBuf {
    let ds = dir.join("fixture.safetensors");
    let recs: Vec<Rec> = FIXTURE_SEQS
        .iter()
        .enumerate()
        .map(|(i, s)| rec(s, Some((i % 2) as i64)))
        .collect();
    write_dataset(&ds, &recs, max_length);
    ds
}

#[test]
fn logits_of_all_four_adapters_match_the_pytorch_reference() {
    let dir = tempfile::tempdir().unwrap();
    // Rows padded to 16 although the model takes 12: padding beyond the longest record is cut.
    let ds = fixture_dataset(dir.path(), 16);
    let expected = expected();
    for adapter in ["cls", "mean", "max", "gated"] {
        let input = ClassifierInput::open(&fixture_checkpoint(adapter), &ds, Device::Cpu).unwrap();
        let logits = input.logits(&[0, 1, 2]).unwrap();
        let want = expected[&format!("{adapter}.logits")]
            .to_vec2::<f32>()
            .unwrap();
        for (r, (a, b)) in logits.iter().zip(&want).enumerate() {
            for (x, y) in a.iter().zip(b) {
                assert!(
                    (x - y).abs() < 1e-4,
                    "{adapter} record {r}: luminome {a:?} vs torch {b:?}"
                );
            }
        }
        // Records one at a time give the same logits as the batch (padding never leaks in).
        let single = input.logits(&[2]).unwrap();
        assert!((single[0][0] - logits[2][0]).abs() < 1e-5, "{adapter}");
    }
}

#[test]
fn training_evaluation_and_predict_compute_the_same_probabilities() {
    // Dev/test metrics during training and luminome-predict's columns come from one softmax: the
    // same checkpoint and batch give bit-identical probabilities on both paths. (Rows of 12
    // tokens: the longest record, so neither path trims padding; one batch of all three.)
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path(), 12);
    let input = ClassifierInput::open(&fixture_checkpoint("gated"), &ds, Device::Cpu).unwrap();
    let trainer_probs =
        predict_probs(input.model().unwrap(), &input.dataset, 3, &Device::Cpu).unwrap();
    let predict_probs: Vec<f64> = input
        .logits(&[0, 1, 2])
        .unwrap()
        .iter()
        .flat_map(|l| softmax(l))
        .collect();
    assert_eq!(trainer_probs, predict_probs);
}

#[test]
fn predictions_tsv_has_probabilities_from_the_reference_logits_and_metrics_that_match() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path(), 12);
    let out = dir.path().join("preds.tsv");
    let metrics = dir.path().join("metrics.tsv");
    let ckpt = fixture_checkpoint("gated");
    let o = predict_with_metrics(
        &[&ckpt],
        &ds,
        &out,
        &metrics,
        &["--batch-size", "2", "--threads", "1"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "record\tname\tlabel\tprob_0\tprob_1\tpredicted");
    assert_eq!(lines.len(), 4);
    let want = expected()["gated.logits"].to_vec2::<f32>().unwrap();
    let mut truth = Vec::new();
    let mut probs = Vec::new();
    for (i, line) in lines[1..].iter().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f[0], i.to_string());
        assert_eq!(f[1], format!("seq{i}"));
        assert_eq!(f[2], (i % 2).to_string());
        let p: Vec<f64> = f[3..5].iter().map(|x| x.parse().unwrap()).collect();
        assert!(
            (p[0] + p[1] - 1.0).abs() < 2e-6,
            "probabilities sum to 1: {p:?}"
        );
        let reference = softmax(&want[i]);
        assert!(
            (p[1] - reference[1]).abs() < 1e-4,
            "record {i}: {p:?} vs {reference:?}"
        );
        let predicted = if p[1] > p[0] { "1" } else { "0" };
        assert_eq!(f[5], predicted);
        truth.push(i % 2);
        probs.extend(p);
    }
    // The metrics file is what luminome-metrics computes from these probabilities.
    let m = ClassificationMetrics::compute(&truth, &probs, 2).unwrap();
    let metrics_text = std::fs::read_to_string(&metrics).unwrap();
    assert!(metrics_text.starts_with("metric\tvalue\n"));
    for (k, v) in m.rows() {
        assert!(
            metrics_text.contains(&format!("{k}\t{v}\n")),
            "{k} {v} missing from\n{metrics_text}"
        );
    }
    if python_has("pandas") {
        let script = "import pandas as pd, sys\n\
            d = pd.read_csv(sys.argv[1], sep='\\t')\n\
            assert list(d.columns) == ['record', 'name', 'label', 'prob_0', 'prob_1', 'predicted'], d.columns\n\
            assert len(d) == 3\n\
            assert ((d.prob_0 + d.prob_1 - 1).abs() < 1e-5).all()\n\
            m = pd.read_csv(sys.argv[2], sep='\\t', index_col='metric')\n\
            assert 0 <= float(m.loc['accuracy', 'value']) <= 1\n";
        let o = Command::new("python3")
            .args([
                "-c",
                script,
                out.to_str().unwrap(),
                metrics.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn unlabelled_data_gets_no_label_column_and_metrics_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("nolabel.safetensors");
    write_dataset(&ds, &[rec("ACGT", None), rec("GGGA", None)], 12);
    let out = dir.path().join("preds.tsv");
    let ckpt = fixture_checkpoint("mean");
    let args = [
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    let o = predict(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("record\tname\tprob_0\tprob_1\tpredicted\n"),
        "{text}"
    );
    std::fs::remove_file(&out).unwrap();
    let metrics = dir.path().join("m.tsv");
    let mut with_metrics = args.to_vec();
    with_metrics.extend(["--metrics", metrics.to_str().unwrap()]);
    let o = predict(&with_metrics);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs true labels"));
    assert!(!out.exists() && !metrics.exists());
}

/// Runs predict expecting failure; returns stderr and checks that nothing was written.
fn refused(dir: &Path, ckpt: &Path, ds: &Path) -> String {
    refused_with(dir, ckpt, ds, &[])
}

/// [`refused`] with `extra` flags after the inputs and output.
fn refused_with(dir: &Path, ckpt: &Path, ds: &Path, extra: &[&str]) -> String {
    let before = files_in(dir);
    let out = dir.join("preds.tsv");
    let mut args = vec![
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = predict(&args);
    assert!(!o.status.success());
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(files_in(dir), before, "a refused run left files behind");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn flags_of_other_families_are_refused_for_a_classifier_before_any_output() {
    // --subset belongs to expression models, --vcf/--bedgraph/--npz to variant scorers: the
    // classifier has neither capability, so each is refused naming what it is for.
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path(), 12);
    let ckpt = fixture_checkpoint("mean");
    let vcf = dir.path().join("scores.vcf");
    for (flag, value, needle) in [
        (
            "--subset",
            "test",
            "--subset test is for expression models trained with --holdout",
        ),
        (
            "--vcf",
            vcf.to_str().unwrap(),
            "--vcf, --bedgraph and --npz are written for variant datasets",
        ),
    ] {
        // Exit 1 and nothing written are checked by refused_with.
        let err = refused_with(dir.path(), &ckpt, &ds, &[flag, value]);
        assert!(err.contains(needle), "{flag}: {err}");
    }
}

#[test]
fn a_masked_lm_checkpoint_is_refused_with_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("mlm.safetensors");
    write_mlm_checkpoint(&ckpt);
    let ds = fixture_dataset(dir.path(), 12);
    let err = refused(dir.path(), &ckpt, &ds);
    assert!(
        err.contains("mlm.safetensors") && err.contains("masked-LM") && err.contains("classifier"),
        "{err}"
    );
}

#[test]
fn a_dataset_with_another_vocabulary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("other.safetensors");
    let mut tok = luminome_engine::testing::nucleotide_tokenizer();
    tok.vocab.push("X".into());
    write_dataset_with(&ds, &[rec("ACGT", Some(0))], 12, tok);
    let err = refused(dir.path(), &fixture_checkpoint("gated"), &ds);
    assert!(
        err.contains("other.safetensors") && err.contains("tokenized differently"),
        "{err}"
    );
}

#[test]
fn a_sequence_longer_than_the_model_is_refused_naming_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("long.safetensors");
    // 10 bases + [CLS] + [SEP] = 12 tokens fits; 11 bases = 13 tokens does not (max length 12).
    write_dataset(
        &ds,
        &[rec("ACGTACGTAC", Some(0)), rec("ACGTACGTACG", Some(1))],
        16,
    );
    let err = refused(dir.path(), &fixture_checkpoint("cls"), &ds);
    assert!(
        err.contains("long.safetensors: record 2 (seq1)")
            && err.contains("13 tokens")
            && err.contains("max length 12"),
        "{err}"
    );
}

#[test]
fn a_label_the_model_does_not_know_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("labels.safetensors");
    write_dataset(&ds, &[rec("ACGT", Some(0)), rec("ACGA", Some(5))], 12);
    let err = refused(dir.path(), &fixture_checkpoint("max"), &ds);
    assert!(
        err.contains("record 2 (seq1)") && err.contains("label 5"),
        "{err}"
    );
}

/// Reads a predictions TSV: the probability columns of every line.
fn probability_columns(path: &Path) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            f[3..5].iter().map(|x| x.parse().unwrap()).collect()
        })
        .collect()
}

#[test]
fn an_ensemble_averages_its_members_probabilities_and_reports_each_member() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path(), 12);
    let out = dir.path().join("ensemble.tsv");
    let metrics = dir.path().join("ensemble.metrics.tsv");
    let (gated, mean) = (fixture_checkpoint("gated"), fixture_checkpoint("mean"));
    // `--checkpoint a b` and the flag repeated are the same command.
    for form in [0, 1] {
        let mut args = vec!["--checkpoint", gated.to_str().unwrap()];
        if form == 1 {
            args.push("--checkpoint");
        }
        args.extend([
            mean.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--metrics",
            metrics.to_str().unwrap(),
            "--batch-size",
            "2",
            "-q",
        ]);
        let o = predict(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            text.starts_with("record\tname\tlabel\tprob_0\tprob_1\tpredicted\n"),
            "{text}"
        );
        // Each row is the mean of the two reference models' softmax.
        let expected = expected();
        let g = expected["gated.logits"].to_vec2::<f32>().unwrap();
        let m = expected["mean.logits"].to_vec2::<f32>().unwrap();
        let got = probability_columns(&out);
        assert_eq!(got.len(), 3);
        let mut truth = Vec::new();
        let mut probs = Vec::new();
        for (i, p) in got.iter().enumerate() {
            let (pg, pm) = (softmax(&g[i]), softmax(&m[i]));
            for c in 0..2 {
                let want = (pg[c] + pm[c]) / 2.0;
                assert!((p[c] - want).abs() < 1e-4, "record {i}: {p:?} vs {want}");
            }
            truth.push(i % 2);
            probs.extend(p);
        }
        let text = std::fs::read_to_string(&metrics).unwrap();
        let want = ClassificationMetrics::compute(&truth, &probs, 2).unwrap();
        let auroc = want.rows().into_iter().find(|(k, _)| k == "auroc").unwrap();
        assert!(text.contains(&format!("auroc\t{}\n", auroc.1)), "{text}");
        assert!(text.contains("members\t2\n"), "{text}");
        // Each member's own metrics, as luminome-predict gives them for that checkpoint alone.
        for (i, c) in [&gated, &mean].into_iter().enumerate() {
            let single_metrics = dir.path().join(format!("single{i}.metrics.tsv"));
            let single = dir.path().join(format!("single{i}.tsv"));
            let o = predict_with_metrics(&[c], &ds, &single, &single_metrics, &["-q"]);
            assert!(o.status.success());
            for line in std::fs::read_to_string(&single_metrics)
                .unwrap()
                .lines()
                .skip(1)
                .filter(|l| !l.starts_with("confusion_"))
            {
                assert!(
                    text.contains(&format!("member_{}.{line}\n", i + 1)),
                    "member_{}.{line} missing from\n{text}",
                    i + 1
                );
            }
        }
    }
}

#[test]
fn an_ensemble_refuses_a_member_that_is_not_a_classifier_or_has_other_classes() {
    let dir = tempfile::tempdir().unwrap();
    let ds = fixture_dataset(dir.path(), 12);
    let mlm = dir.path().join("mlm.safetensors");
    write_mlm_checkpoint(&mlm);
    // The gated fixture with its classes in the other order: label values [1, 0].
    let swapped = dir.path().join("swapped.safetensors");
    let meta =
        luminome_engine::checkpoint::read_checkpoint_meta(&fixture_checkpoint("gated")).unwrap();
    let mut config = meta.model.get::<ClassifierConfig>().unwrap().clone();
    config.label_values = vec![1, 0];
    let config = luminome_engine::ModelConfig::from(config);
    let built = luminome_engine::BuiltModel::new(&config, &Device::Cpu, 3).unwrap();
    let meta = luminome_engine::checkpoint::CheckpointMeta::new(
        config,
        luminome_engine::input::InputSpec::Tokens(meta.tokenizer.clone().unwrap()),
        vec![],
        "test",
        "",
    );
    luminome_engine::checkpoint::save_checkpoint(&swapped, &meta, &built.varmap).unwrap();
    let gated = fixture_checkpoint("gated");
    let bytes = std::fs::read(&swapped).unwrap();
    let preds = dir.path().join("preds.tsv");
    // The same file twice (here through a hard link) would count double.
    let link = dir.path().join("link.safetensors");
    std::fs::hard_link(&gated, &link).unwrap();
    // The last case names a member checkpoint as the output: refused before anything runs.
    for (other, out, want) in [
        (&mlm, &preds, "mlm.safetensors: holds a masked-LM"),
        (&swapped, &preds, "swapped.safetensors: its classes"),
        (&link, &preds, "is given twice (members 1 and 2)"),
        (&swapped, &swapped, "--checkpoint"),
    ] {
        let before = files_in(dir.path());
        let o = predict(&[
            "--checkpoint",
            gated.to_str().unwrap(),
            other.to_str().unwrap(),
            "--dataset",
            ds.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{err}");
        assert_eq!(
            files_in(dir.path()),
            before,
            "a refused run left files behind"
        );
    }
    assert_eq!(std::fs::read(&swapped).unwrap(), bytes);
}

/// `--help` starts with what a run needs (inputs, then outputs); model options follow.
#[test]
fn help_lists_inputs_and_outputs_before_the_model_options() {
    luminome_cli::assert_help_starts_with(
        env!("CARGO_BIN_EXE_luminome-predict"),
        &["Options", "Inputs", "Outputs", "Model options"],
    );
}
