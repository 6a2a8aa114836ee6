//! Which samples train, select (dev) and test a region model, chosen by flag and stored in the
//! checkpoint so `luminome-predict --subset test` scores exactly the held-out samples.
//!
//! - **Genes by chromosome block** (`--holdout genes`): the distinct TSS positions of the
//!   dataset, in chromosome then position order, are cut into `--blocks` K contiguous blocks of
//!   (nearly) equal size; the genes of block `--test-block` are the test set and those of
//!   `--dev-block` the dev set, in every cell type, so no test gene is seen in training in any
//!   cell type and neighbouring genes (which share most of their regions) stay together.
//! - **Leave one cell type out** (`--holdout cell-type --test-cell-type C`): every sample of C
//!   is the test set; the dev set is block `--dev-block` of the other cell types' genes.
//!
//! Blocks are stored as TSS intervals per chromosome, so the same split applies to another
//! dataset of the same genes (say, new cell types).

use anyhow::{bail, Result};
use luminome_io::region_dataset::SampleRow;
use serde::{Deserialize, Serialize};

/// Where a sample goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Subset {
    All,
    Train,
    Dev,
    Test,
}

impl Subset {
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Train => "train",
            Self::Dev => "dev",
            Self::Test => "test",
        }
    }
}

/// TSS positions `first..=last` on one chromosome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TssInterval {
    pub chrom: String,
    pub first: u64,
    pub last: u64,
}

fn contains(intervals: &[TssInterval], s: &SampleRow) -> bool {
    intervals
        .iter()
        .any(|i| i.chrom == s.chrom && i.first <= s.tss && s.tss <= i.last)
}

/// A split, as stored in checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Holdout {
    Genes {
        blocks: usize,
        test_block: usize,
        dev_block: usize,
        test: Vec<TssInterval>,
        dev: Vec<TssInterval>,
    },
    CellType {
        cell_type: String,
        blocks: usize,
        dev_block: usize,
        dev: Vec<TssInterval>,
    },
}

impl Holdout {
    /// Where sample `s` goes.
    pub fn assign(&self, s: &SampleRow) -> Subset {
        match self {
            Self::Genes { test, dev, .. } => {
                if contains(test, s) {
                    Subset::Test
                } else if contains(dev, s) {
                    Subset::Dev
                } else {
                    Subset::Train
                }
            }
            Self::CellType { cell_type, dev, .. } => {
                if &s.cell_type == cell_type {
                    Subset::Test
                } else if contains(dev, s) {
                    Subset::Dev
                } else {
                    Subset::Train
                }
            }
        }
    }

    /// One line for logs and docs.
    pub fn describe(&self) -> String {
        match self {
            Self::Genes {
                blocks,
                test_block,
                dev_block,
                ..
            } => format!("genes by chromosome block: test block {test_block}/{blocks}, dev block {dev_block}/{blocks}"),
            Self::CellType {
                cell_type,
                blocks,
                dev_block,
                ..
            } => format!("leave {cell_type} out (test); dev block {dev_block}/{blocks} of the other cell types' genes"),
        }
    }
}

/// The TSS intervals of each of `blocks` contiguous blocks of the distinct TSS positions of
/// `samples` (chromosomes in order of first appearance, positions ascending).
pub fn tss_blocks(samples: &[&SampleRow], blocks: usize) -> Vec<Vec<TssInterval>> {
    let mut chroms: Vec<&str> = Vec::new();
    for s in samples {
        if !chroms.contains(&s.chrom.as_str()) {
            chroms.push(&s.chrom);
        }
    }
    let mut keys: Vec<(usize, u64)> = samples
        .iter()
        .map(|s| {
            (
                chroms.iter().position(|c| *c == s.chrom).unwrap_or(0),
                s.tss,
            )
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let n = keys.len();
    (0..blocks)
        .map(|b| {
            let part = &keys[b * n / blocks..(b + 1) * n / blocks];
            let mut out: Vec<TssInterval> = Vec::new();
            for &(c, tss) in part {
                match out.last_mut() {
                    Some(last) if last.chrom == chroms[c] => last.last = tss,
                    _ => out.push(TssInterval {
                        chrom: chroms[c].to_string(),
                        first: tss,
                        last: tss,
                    }),
                }
            }
            out
        })
        .collect()
}

/// The holdout settings of a command line, before they meet the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HoldoutKind {
    /// No split: every sample trains (a --dev file selects the checkpoint, if given).
    None,
    /// Genes held out by chromosome block (--blocks, --test-block, --dev-block).
    Genes,
    /// One cell type held out (--test-cell-type); dev is a block of the others' genes.
    CellType,
}

#[derive(clap::Args, Debug, Clone)]
pub struct HoldoutArgs {
    /// Which samples are held out of training: none (a --dev file, if any, selects the
    /// checkpoint), genes (by chromosome block) or cell-type (leave one out).
    #[arg(long, value_enum, default_value = "none")]
    pub holdout: HoldoutKind,
    /// Contiguous blocks of genes (by TSS position) for --holdout genes / cell-type.
    #[arg(long, default_value_t = 10)]
    pub blocks: usize,
    /// The test block, 1-based (--holdout genes) [default: the last].
    #[arg(long)]
    pub test_block: Option<usize>,
    /// The dev block, 1-based [default: the one before the test block; the last for cell-type].
    #[arg(long)]
    pub dev_block: Option<usize>,
    /// The held-out cell type (--holdout cell-type).
    #[arg(long)]
    pub test_cell_type: Option<String>,
}

impl HoldoutArgs {
    /// The split of `samples` (the dataset's samples table), or `None` without --holdout.
    pub fn holdout(
        &self,
        samples: &[SampleRow],
        cell_types: &[String],
        dataset: &str,
    ) -> Result<Option<Holdout>> {
        if self.holdout != HoldoutKind::CellType && self.test_cell_type.is_some() {
            bail!("--test-cell-type needs --holdout cell-type");
        }
        if self.holdout == HoldoutKind::None {
            if self.test_block.is_some() || self.dev_block.is_some() {
                bail!("--test-block and --dev-block need --holdout genes or cell-type");
            }
            return Ok(None);
        }
        let k = self.blocks;
        if k < 2 {
            bail!("--blocks must be at least 2, got {k}");
        }
        let check = |name: &str, b: usize| -> Result<usize> {
            if b == 0 || b > k {
                bail!("--{name} must be between 1 and --blocks ({k}), got {b}");
            }
            Ok(b)
        };
        match self.holdout {
            HoldoutKind::None => unreachable!(),
            HoldoutKind::Genes => {
                let test_block = check("test-block", self.test_block.unwrap_or(k))?;
                let dev_block = check(
                    "dev-block",
                    self.dev_block
                        .unwrap_or(if test_block == 1 { k } else { test_block - 1 }),
                )?;
                if dev_block == test_block {
                    bail!("--dev-block and --test-block are both {dev_block}");
                }
                let all: Vec<&SampleRow> = samples.iter().collect();
                let blocks = tss_blocks(&all, k);
                Ok(Some(Holdout::Genes {
                    blocks: k,
                    test_block,
                    dev_block,
                    test: blocks[test_block - 1].clone(),
                    dev: blocks[dev_block - 1].clone(),
                }))
            }
            HoldoutKind::CellType => {
                let Some(cell) = &self.test_cell_type else {
                    bail!(
                        "--holdout cell-type needs --test-cell-type (one of {})",
                        cell_types.join(", ")
                    );
                };
                if !cell_types.contains(cell) {
                    bail!(
                        "{dataset}: --test-cell-type {cell:?} is not a cell type of the dataset (it has {})",
                        cell_types.join(", ")
                    );
                }
                if cell_types.len() < 2 {
                    bail!("{dataset}: leaving {cell} out leaves no cell type to train on");
                }
                if self.test_block.is_some() {
                    bail!(
                        "--test-block is for --holdout genes; the test set is every {cell} sample"
                    );
                }
                let dev_block = check("dev-block", self.dev_block.unwrap_or(k))?;
                let others: Vec<&SampleRow> =
                    samples.iter().filter(|s| &s.cell_type != cell).collect();
                let blocks = tss_blocks(&others, k);
                Ok(Some(Holdout::CellType {
                    cell_type: cell.clone(),
                    blocks: k,
                    dev_block,
                    dev: blocks[dev_block - 1].clone(),
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u64, chrom: &str, tss: u64, cell: &str) -> SampleRow {
        SampleRow {
            sample: i,
            gene: format!("G{tss}"),
            gene_id: format!("G{tss}"),
            cell_type: cell.into(),
            chrom: chrom.into(),
            tss,
            strand: '+',
            regions_used: 1,
            tss_region: None,
            expression: Some(1.0),
        }
    }

    fn samples() -> Vec<SampleRow> {
        // 10 genes on two chromosomes, two cell types each.
        let mut v = Vec::new();
        for (g, (c, t)) in [
            ("a", 10),
            ("a", 20),
            ("a", 30),
            ("a", 40),
            ("a", 50),
            ("b", 5),
            ("b", 15),
            ("b", 25),
            ("b", 35),
            ("b", 45),
        ]
        .into_iter()
        .enumerate()
        {
            v.push(row(2 * g as u64, c, t, "K562"));
            v.push(row(2 * g as u64 + 1, c, t, "GM12878"));
        }
        v
    }

    fn args(kind: HoldoutKind) -> HoldoutArgs {
        HoldoutArgs {
            holdout: kind,
            blocks: 5,
            test_block: None,
            dev_block: None,
            test_cell_type: None,
        }
    }

    #[test]
    fn gene_blocks_keep_a_gene_in_one_subset_across_cell_types() {
        let s = samples();
        let cells = ["K562".to_string(), "GM12878".to_string()];
        let h = args(HoldoutKind::Genes)
            .holdout(&s, &cells, "d")
            .unwrap()
            .unwrap();
        let subset: Vec<Subset> = s.iter().map(|r| h.assign(r)).collect();
        // Block 5 (last) = b:35, b:45; block 4 = b:15, b:25 (dev).
        for (r, sub) in s.iter().zip(&subset) {
            let expected = match (r.chrom.as_str(), r.tss) {
                ("b", 35) | ("b", 45) => Subset::Test,
                ("b", 15) | ("b", 25) => Subset::Dev,
                _ => Subset::Train,
            };
            assert_eq!(*sub, expected, "{r:?}");
        }
    }

    #[test]
    fn leave_one_cell_type_out_and_refusals() {
        let s = samples();
        let cells = ["K562".to_string(), "GM12878".to_string()];
        let mut a = args(HoldoutKind::CellType);
        a.test_cell_type = Some("GM12878".into());
        let h = a.holdout(&s, &cells, "d").unwrap().unwrap();
        for r in &s {
            let sub = h.assign(r);
            if r.cell_type == "GM12878" {
                assert_eq!(sub, Subset::Test);
            } else {
                assert_ne!(sub, Subset::Test);
            }
        }
        assert_eq!(s.iter().filter(|r| h.assign(r) == Subset::Dev).count(), 2);
        a.test_cell_type = Some("HeLa".into());
        let e = a
            .holdout(&s, &cells, "d.safetensors")
            .unwrap_err()
            .to_string();
        assert!(e.contains("d.safetensors: --test-cell-type \"HeLa\" is not a cell type of the dataset (it has K562, GM12878)"), "{e}");
        let mut g = args(HoldoutKind::Genes);
        g.test_block = Some(6);
        assert!(g
            .holdout(&s, &cells, "d")
            .unwrap_err()
            .to_string()
            .contains("between 1 and --blocks (5)"));
    }
}
