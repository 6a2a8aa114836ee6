//! The region dataset: what `luminome-regions` writes and the region expression models read.
//!
//! One safetensors file with, for S samples (gene × cell type) of N region slots and F features
//! per region (motif or cluster scores, then accessibility as the last feature):
//!
//! | tensor | dtype | shape | meaning |
//! |---|---|---|---|
//! | `features` | f32 | [S, N, F] | region features; zero in empty slots |
//! | `region_mask` | u8 | [S, N] | 1 for a real region, 0 for an empty slot |
//! | `tss_index` | i64 | [S] | slot of the region holding the TSS, −1 when none does |
//! | `region_index` | i64 | [S, N] | row of each slot's region in the regions table, −1 for empty slots |
//! | `tss_slot` | i64 | [S] | the TSS's slot: its region's, or, when no region holds it, the slot it falls before (0..=N) |
//! | `strand` | i8 | [S] | the gene's strand: 1 (+), −1 (−), 0 (unknown) |
//! | `expression` | f32 | [S] | optional: the (transformed) expression target, NaN when missing |
//!
//! `__metadata__` holds `kind` (`luminome.region_dataset`), `format_version`, `tool`,
//! `tool_version`, `command_line`, `feature_names` (JSON list) and `luminome`: a JSON document
//! ([`RegionDatasetMeta`]). Beside it, the samples table (one row per sample: gene, gene id, cell
//! type, TSS, regions used, expression; [`SampleRow`]).
//!
//! - [`meta`]: the metadata document; [`writer`] / [`reader`]: writing sample by sample with
//!   memory bounded by one sample, and memory-mapped reading.

pub mod meta;
pub mod reader;
pub mod writer;

pub use meta::{ExpressionSource, RegionDatasetMeta, REGION_DATASET_KIND, REGION_DATASET_VERSION};
pub use reader::{
    read_region_coords, read_samples, RegionBatch, RegionCoords, RegionDataset, SampleRow,
    SAMPLES_HEADER,
};
pub use writer::{RegionDatasetWriter, RegionSample};

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn meta(n_regions: usize, features: &[&str]) -> RegionDatasetMeta {
        RegionDatasetMeta {
            cell_types: vec!["K562".into()],
            coordinates: "0-based half-open".into(),
            expression: vec![],
            expression_transform: Some("log1p".into()),
            feature_names: features.iter().map(|s| s.to_string()).collect(),
            genes: "genes.bed".into(),
            motif: serde_json::Value::Null,
            n_regions,
            normalisation: "logcpm".into(),
            reference: "ref.fa".into(),
            region_sources: serde_json::Value::Null,
            regions_table: None,
            regions_total: 5,
            samples_table: Some("d.samples.tsv".into()),
            selection: "nearest".into(),
            window_bp: 1000,
        }
    }

    /// Two samples of N = 3 regions × F = 2 features; the second has no expression value.
    fn write(dir: &Path, m: &RegionDatasetMeta) -> std::path::PathBuf {
        let out = dir.join("d.safetensors");
        let mut w =
            RegionDatasetWriter::create(&out, &dir.join("d.samples.tsv"), 3, 2, true).unwrap();
        let features: Vec<f32> = (0..6).map(|v| v as f32).collect();
        for (i, expression) in [Some(2.5), None].into_iter().enumerate() {
            w.push(&RegionSample {
                features: &features,
                region_mask: &[1, 1, 0],
                tss_index: (i == 0).then_some(1),
                tss_slot: if i == 0 { 1 } else { 2 },
                region_index: &[3, 4, -1],
                expression,
                gene: "G",
                gene_id: "ENSG1",
                cell_type: "K562",
                chrom: "chr1",
                tss: 100,
                strand: '-',
                regions_used: 2,
                tss_region: (i == 0).then_some(4),
            })
            .unwrap();
        }
        w.finish(m, "test", "0", "test").unwrap();
        out
    }

    #[test]
    fn what_the_writer_writes_the_reader_reads() {
        let dir = tempfile::tempdir().unwrap();
        let out = write(dir.path(), &meta(3, &["motif", "accessibility"]));
        let ds = RegionDataset::open(&out).unwrap();
        assert_eq!((ds.len(), ds.n_regions(), ds.n_features()), (2, 3, 2));
        assert_eq!(ds.feature_names(), ["motif", "accessibility"]);
        assert_eq!(ds.meta(), &meta(3, &["motif", "accessibility"]));
        let b = ds.batch(&[1, 0]).unwrap();
        assert_eq!(b.features.len(), 12);
        assert_eq!(&b.features[..6], &[0., 1., 2., 3., 4., 5.]);
        assert_eq!(b.region_mask, [1, 1, 0, 1, 1, 0]);
        assert_eq!(b.tss_index, [-1, 1]);
        assert_eq!(b.tss_slot, Some(vec![2, 1]));
        assert_eq!(b.strand, Some(vec![-1, -1]));
        let e = b.expression.unwrap();
        assert!(e[0].is_nan() && e[1] == 2.5);
        let samples = ds.read_samples().unwrap();
        assert_eq!(samples[0].expression, Some(2.5));
        assert_eq!(samples[1].expression, None);
        assert_eq!(
            (samples[0].tss_region, samples[1].tss_region),
            (Some(4), None)
        );
        assert_eq!(samples[0].strand, '-');
        assert!(ds.batch(&[2]).is_err());
    }

    /// A NaN or ±inf feature, or an infinite expression, is refused on open by every tool
    /// (train, predict, importance open datasets here), naming sample, slot and feature.
    #[test]
    fn non_finite_features_and_infinite_expression_are_refused_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let m = meta(3, &["motif", "accessibility"]);
        for (bad_feature, expression, needle) in [
            (
                f32::NAN,
                1.0,
                "sample 0, region slot 1: feature motif is NaN",
            ),
            (f32::NEG_INFINITY, 1.0, "feature motif is -inf"),
            (0.0, f64::INFINITY, "sample 0: expression inf is infinite"),
        ] {
            let out = dir.path().join("bad.safetensors");
            let mut w =
                RegionDatasetWriter::create(&out, &dir.path().join("bad.samples.tsv"), 3, 2, true)
                    .unwrap();
            let mut features: Vec<f32> = (0..6).map(|v| v as f32).collect();
            features[2] = bad_feature;
            if bad_feature == 0.0 {
                features[2] = 2.0;
            }
            w.push(&RegionSample {
                features: &features,
                region_mask: &[1, 1, 0],
                tss_index: Some(1),
                tss_slot: 1,
                region_index: &[3, 4, -1],
                expression: Some(expression),
                gene: "G",
                gene_id: "ENSG1",
                cell_type: "K562",
                chrom: "chr1",
                tss: 100,
                strand: '+',
                regions_used: 2,
                tss_region: Some(4),
            })
            .unwrap();
            w.finish(&m, "test", "0", "test").unwrap();
            let e = format!("{:#}", RegionDataset::open(&out).err().expect("refused"));
            assert!(e.contains(needle) && e.contains("bad.safetensors"), "{e}");
        }
    }

    #[test]
    fn the_feature_scale_is_read_back_and_raw_when_absent() {
        let dir = tempfile::tempdir().unwrap();
        let raw = meta(3, &["motif", "accessibility"]);
        assert_eq!(raw.feature_scale(), "raw");
        let header = raw.header("t", "0", "").unwrap();
        assert!(!header["luminome"].contains("feature_scale"));
        let mut get = raw;
        get.motif = serde_json::json!({"aggregation": "sum", "feature_scale": "get"});
        let out = write(dir.path(), &get);
        let ds = RegionDataset::open(&out).unwrap();
        assert_eq!(ds.meta().feature_scale(), "get");
    }

    #[test]
    fn a_dataset_whose_shapes_disagree_with_its_metadata_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        // Metadata naming three features over tensors of two.
        let out = write(dir.path(), &meta(3, &["a", "b", "accessibility"]));
        let err = RegionDataset::open(&out).err().unwrap().to_string();
        assert!(
            err.contains("d.safetensors") && err.contains("features"),
            "{err}"
        );
        // A token dataset is not a region dataset.
        let tok = dir.path().join("t.safetensors");
        let mut w = crate::tensorfile::StreamingTensorWriter::new(
            &tok,
            vec![crate::tensorfile::ColumnSpec::fixed(
                "input_ids",
                crate::tensorfile::ElemType::U8,
                &[2],
            )],
        )
        .unwrap();
        w.push_u32(0, &[1, 2]).unwrap();
        let mut md = std::collections::BTreeMap::new();
        md.insert("kind".to_string(), "luminome.token_dataset".to_string());
        w.finish(md).unwrap().commit().unwrap();
        let err = RegionDataset::open(&tok).err().unwrap().to_string();
        assert!(err.contains("not a Luminome region dataset"), "{err}");
    }
}
