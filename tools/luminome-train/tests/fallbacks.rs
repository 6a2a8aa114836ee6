//! The path CUDA and Metal run, checked on the CPU: with every op's primitive fallback forced,
//! each op and each step-trained family (one micro-batch: loss and every gradient) must match the
//! fused CPU kernels. (examples/cuda_check.rs runs the same comparison on a GPU.)

use luminome_engine::models::ModelConfig;
use luminome_train::device_check::{compare, Target};

#[test]
fn every_op_and_family_computes_the_same_through_its_fallbacks() {
    let report = compare(&Target::CpuFallbacks).unwrap();
    for (name, fwd, bwd) in &report {
        assert!(
            *fwd <= 1e-4 && *bwd <= 1e-4,
            "{name}: forward {fwd:e}, gradients {bwd:e}"
        );
    }
    // Every registered family trained by optimizer steps has a row with gradients: a family
    // added to the registry without a case in device_check's list fails here.
    let closed_form = luminome_train::closed_form_kinds();
    for (kind, family) in ModelConfig::families() {
        let checked = report.iter().any(|(n, _, _)| {
            n.starts_with("family ") && n.contains(&format!(" [{kind}] (")) && !n.contains("(0 ")
        });
        assert!(
            checked || closed_form.contains(kind),
            "the {family} family (kind {kind}) has no case in device_check: {report:?}"
        );
        assert!(
            !(checked && closed_form.contains(kind)),
            "{kind} is declared a closed-form fit but was checked"
        );
    }
    // The published backbones are checked as every family (rotary, ALiBi, the gated
    // feed-forwards through the primitives CUDA runs).
    for case in ["classify dnabert2", "classify nt-v2"] {
        let row = report
            .iter()
            .find(|(n, _, _)| n.starts_with(&format!("family {case} [")));
        assert!(
            row.is_some_and(|(n, _, _)| !n.contains("(0 ")),
            "{case}: {report:?}"
        );
    }
    // Not vacuous: the forced fallbacks really ran (their float rounding differs somewhere).
    assert!(
        report.iter().any(|(_, f, b)| *f > 0.0 || *b > 0.0),
        "{report:?}"
    );
}
