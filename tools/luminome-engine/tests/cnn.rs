//! The dilated residual CNN backbone under the classification adapters: padding never changes
//! an output, the reverse-complement-averaged model gives one answer for both strands, and its
//! gradients (the ones importance methods take) are right.

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use luminome_engine::backbones::{BackboneConfig, CnnConfig};
use luminome_engine::input::strand::ReverseComplement;
use luminome_engine::models::classifier::{AdapterKind, Classifier, ClassifierConfig};
use luminome_engine::nn::gradcheck::max_grad_error;
use luminome_engine::nn::init::init_parameters;
use luminome_engine::testing::nucleotide_tokenizer;

const ADAPTERS: [AdapterKind; 5] = [
    AdapterKind::Cls,
    AdapterKind::Mean,
    AdapterKind::Max,
    AdapterKind::Gated,
    AdapterKind::GatedMax,
];

fn tiny(adapter: AdapterKind, rc_average: bool, dtype: DType) -> Classifier {
    let cfg = ClassifierConfig {
        backbone: BackboneConfig::Cnn(CnnConfig {
            vocab_size: 10,
            channels: 8,
            first_kernel: 5,
            kernel: 3,
            num_layers: 3,
            dropout: 0.1,
            max_length: 64,
            layer_norm_eps: 1e-5,
            pad_id: 0,
        }),
        adapter,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average: rc_average
            .then(|| ReverseComplement::for_tokenizer(&nucleotide_tokenizer()).unwrap()),
        gate_score_scale: None,
    };
    let varmap = VarMap::new();
    let model =
        Classifier::new(&cfg, VarBuilder::from_varmap(&varmap, dtype, &Device::Cpu)).unwrap();
    init_parameters(&varmap, 5, None).unwrap();
    // The adapters' N(0, 0.02²) init would make every logit nearly equal.
    for (name, v) in varmap.data().lock().unwrap().iter() {
        if v.rank() >= 2 && name.starts_with("adapter.") {
            v.set(&(v.as_tensor() * 30.0).unwrap()).unwrap();
        }
    }
    model
}

fn batch(seqs: &[&[u8]], len: usize) -> (Tensor, Tensor) {
    luminome_engine::testing::padded_batch(seqs, len)
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

fn revcomp(s: &[u8]) -> Vec<u8> {
    s.iter()
        .rev()
        .map(|b| match b {
            b'A' => b'T',
            b'C' => b'G',
            b'G' => b'C',
            b'T' => b'A',
            x => *x,
        })
        .collect()
}

const SEQS: [&[u8]; 3] = [b"ACGTACGTAACN", b"GGGCCA", b"TTATAAAAGGCCAGTACCGATTGCA"];

#[test]
fn padding_never_changes_a_cnn_classifiers_output() {
    for adapter in ADAPTERS {
        for rc in [false, true] {
            let model = tiny(adapter, rc, DType::F32);
            let (ids, mask) = batch(&SEQS, 27);
            let short = model.forward(&ids, &mask, None).unwrap().logits;
            let (ids, mask) = batch(&SEQS, 64);
            let long = model.forward(&ids, &mask, None).unwrap().logits;
            let d = max_diff(&short, &long);
            assert!(
                d < 1e-5,
                "{adapter:?} rc {rc}: padding changed the logits by {d}"
            );
            let spread = max_diff(&long.get(0).unwrap(), &long.get(1).unwrap());
            assert!(
                spread > 1e-3,
                "{adapter:?}: the logits do not depend on the input"
            );
        }
    }
}

#[test]
fn the_rc_averaged_model_answers_the_same_for_both_strands() {
    let rc_seqs: Vec<Vec<u8>> = SEQS.iter().map(|s| revcomp(s)).collect();
    let rc_refs: Vec<&[u8]> = rc_seqs.iter().map(|s| s.as_slice()).collect();
    for adapter in ADAPTERS {
        let (ids, mask) = batch(&SEQS, 30);
        let (rc_ids, _) = batch(&rc_refs, 30);
        let model = tiny(adapter, true, DType::F32);
        let fwd = model.forward(&ids, &mask, None).unwrap();
        let rev = model.forward(&rc_ids, &mask, None).unwrap();
        let d = max_diff(&fwd.logits, &rev.logits);
        assert!(d < 1e-5, "{adapter:?}: strands differ by {d}");
        if let (Some(g), Some(rg)) = (&fwd.gates, &rev.gates) {
            // The gate of a base on one strand is the gate of its partner on the other.
            let (_, l, _) = g.dims3().unwrap();
            let row = g.get(2).unwrap();
            let rc_row = rg.get(2).unwrap();
            let n = SEQS[2].len();
            for j in 1..=n {
                let a = row.get(j).unwrap();
                let b = rc_row.get(n + 1 - j).unwrap();
                assert!(max_diff(&a, &b) < 1e-5, "{adapter:?}: gate {j} of {l}");
            }
        }
        // A single-strand model of the same weights does tell the strands apart, so the
        // check above is not vacuous.
        let single = tiny(adapter, false, DType::F32);
        let a = single.forward(&ids, &mask, None).unwrap().logits;
        let b = single.forward(&rc_ids, &mask, None).unwrap().logits;
        assert!(max_diff(&a, &b) > 1e-4, "{adapter:?}");
    }
}

#[test]
fn input_gradients_of_the_rc_averaged_model_match_finite_differences() {
    let (ids, mask) = batch(&[b"ACGTAC", b"GGA"], 9);
    let mask = mask.to_dtype(DType::F64).unwrap();
    for adapter in ADAPTERS {
        let model = tiny(adapter, true, DType::F64);
        let x = model.embed(&ids).unwrap().to_dtype(DType::F64).unwrap();
        // Smooth away from one-hot, so that max pooling has no ties.
        let noise = Tensor::randn(0f64, 0.3, x.shape(), &Device::Cpu).unwrap();
        let x = (x + noise).unwrap();
        let w = Tensor::new(&[[1f64, -2.0], [0.5, 3.0]], &Device::Cpu).unwrap();
        let err = max_grad_error(&x, 1e-6, &|x| {
            model
                .forward_from_embeddings(x, &mask, None)?
                .logits
                .mul(&w)?
                .sum_all()
        })
        .unwrap();
        assert!(err < 1e-5, "{adapter:?}: input gradient error {err}");
    }
}
