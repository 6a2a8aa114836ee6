//! Which families luminome-predict runs, against the model registry: every registered family is
//! opened by a predictor or listed in `OTHER_FAMILIES` with what the tool does instead, so a
//! family added to the registry without either fails here.

use luminome_engine::models::ModelConfig;
use luminome_predict::{predictors, OTHER_FAMILIES};

#[test]
fn every_registered_family_has_a_predictor_or_a_stated_alternative() {
    let entries = predictors();
    for (kind, family) in ModelConfig::families() {
        let predicted = entries.iter().filter(|e| e.kind == *kind).count();
        let other = OTHER_FAMILIES.iter().filter(|(k, _)| k == kind).count();
        assert_eq!(
            predicted + other,
            1,
            "the {family} family (kind {kind}): {predicted} predictors, {other} entries in OTHER_FAMILIES"
        );
    }
    for e in &entries {
        assert!(
            ModelConfig::families().iter().any(|(k, _)| *k == e.kind),
            "{}: not a registered kind",
            e.kind
        );
    }
}
