//! The path CUDA and Metal run, checked on the CPU: with every op's primitive fallback forced,
//! each op and each step-trained family (one micro-batch: loss and every gradient) must match the
//! fused CPU kernels. (examples/cuda_check.rs runs the same comparison on a GPU.)

use luminome_train::device_check::{compare, Target};

#[test]
fn every_op_and_family_computes_the_same_through_its_fallbacks() {
    let report = compare(&Target::CpuFallbacks).unwrap();
    assert!(report.len() >= 16, "{report:?}");
    for (name, fwd, bwd) in &report {
        assert!(
            *fwd <= 1e-4 && *bwd <= 1e-4,
            "{name}: forward {fwd:e}, gradients {bwd:e}"
        );
    }
    // The published backbones are checked as every family (rotary, ALiBi, the gated
    // feed-forwards through the primitives CUDA runs).
    for family in ["classify dnabert2", "classify nt-v2"] {
        let row = report
            .iter()
            .find(|(n, _, _)| n.starts_with(&format!("family {family} (")));
        assert!(
            row.is_some_and(|(n, _, _)| !n.contains("(0 ")),
            "{family}: {report:?}"
        );
    }
    // Not vacuous: the forced fallbacks really ran (their float rounding differs somewhere).
    assert!(
        report.iter().any(|(_, f, b)| *f > 0.0 || *b > 0.0),
        "{report:?}"
    );
}
