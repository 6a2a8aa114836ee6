//! The metrics agree with scikit-learn on the sets in `fixtures/sklearn_metrics.json`, written by
//! `fixtures/make_sklearn_fixture.py` (sklearn is needed only to regenerate it).

use luminome_metrics::ClassificationMetrics;
use serde_json::Value;

fn close(name: &str, case: &str, ours: f64, theirs: f64) {
    assert!(
        (ours - theirs).abs() < 1e-9,
        "{case}: {name}: luminome {ours} vs sklearn {theirs}"
    );
}

#[test]
fn every_metric_matches_sklearn() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/sklearn_metrics.json")).expect("valid JSON");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 3);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let k = case["n_classes"].as_u64().unwrap() as usize;
        let labels: Vec<usize> = case["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let probs: Vec<f64> = case["probs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let e = &case["expected"];
        let m = ClassificationMetrics::compute(&labels, &probs, k).unwrap();
        close(
            "accuracy",
            name,
            m.accuracy,
            e["accuracy"].as_f64().unwrap(),
        );
        close(
            "auroc",
            name,
            m.auroc.unwrap(),
            e["auroc"].as_f64().unwrap(),
        );
        close(
            "auprc",
            name,
            m.auprc.unwrap(),
            e["auprc"].as_f64().unwrap(),
        );
        close("f1", name, m.f1, e["f1"].as_f64().unwrap());
        close("mcc", name, m.mcc, e["mcc"].as_f64().unwrap());
        close(
            "sensitivity",
            name,
            m.sensitivity,
            e["sensitivity"].as_f64().unwrap(),
        );
        close(
            "specificity",
            name,
            m.specificity,
            e["specificity"].as_f64().unwrap(),
        );
        let cm = e["confusion"].as_array().unwrap();
        for (t, row) in cm.iter().enumerate() {
            for (p, v) in row.as_array().unwrap().iter().enumerate() {
                assert_eq!(
                    m.confusion.get(t, p),
                    v.as_u64().unwrap(),
                    "{name}: confusion[{t}][{p}]"
                );
            }
        }
    }
}
