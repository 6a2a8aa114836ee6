//! Command-line arguments of `luminome-regions` and their translation into a [`Config`].

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;
use luminome_io::bam::BamFilter;
use luminome_io::expression::{ColumnRef, Duplicates, ExpressionTransform};
use luminome_io::motif::MotifFormat;
use luminome_io::tss::{BedTssMode, TssFormat};

use crate::accessibility::{AccessibilitySource, ChromRename, FragmentMode, Normalisation};
use crate::dataset::FeatureScale;
use crate::motifs::Threshold;
use crate::pipeline::{side_output, BackgroundChoice, CallParams, Config, ExpressionInput};
use crate::scan::Aggregation;
use crate::windows::Selection;

mod choices;
use choices::{
    AggArg, BedTssArg, BgArg, DupArg, FragArg, GenesFormatArg, NormArg, RenameArg, ScaleArg,
    SelectArg, TransformArg,
};

const EXAMPLE: &str = "\
Example (the repository's test data; coordinates are 0-based half-open; mkdir -p work first):

  luminome-regions \\
    --reference test-data/chr22_slice/chr22_slice.fa \\
    --peaks test-data/chr22_slice/peaks.narrowPeak \\
    --accessibility K562=test-data/chr22_slice/acc.K562.bedgraph \\
    --accessibility GM12878=test-data/chr22_slice/acc.GM12878.bedgraph \\
    --motifs test-data/motifs/vierstra_small.meme \\
    --motif-clusters test-data/motifs/vierstra_small_clusters.csv \\
    --genes test-data/chr22_slice/genes_tss.bed --bed-tss center \\
    --expression K562=test-data/expression/k562_tpm_slice.tsv \\
    --expression GM12878=test-data/expression/gm12878_rampage_slice.tsv \\
    --window 200000 --n-regions 50 -o work/regions.safetensors

Writes work/regions.safetensors (features [samples, N, features + 1], region_mask [samples, N],
tss_index [samples], region_index [samples, N], tss_slot [samples], strand [samples], expression
[samples]), work/regions.samples.tsv and work/regions.regions.tsv (per-region accessibility and motif
scores, reusable with --reuse-regions).

Expression tables with a column per cell type: --expression K562=hpa.tsv:K-562 (that column), or
--expression-matrix hpa.tsv (columns named as the --accessibility cell types).
Windows for masked-region pretraining (no genes, no expression): --tile-step 100000 instead of
--genes, one sample per tile and cell type.
In Python: safetensors.numpy.load_file(\"work/regions.safetensors\").";

/// Region × motif / accessibility matrices per gene and cell type.
#[derive(Debug, Parser)]
#[command(name = "luminome-regions", version, about, after_long_help = EXAMPLE, after_help = "See --help for a worked example.")]
pub struct Args {
    /// Reference FASTA (plain, gzip or BGZF; a .fai next to it is used when present).
    #[arg(help_heading = "Inputs", long)]
    pub reference: PathBuf,
    /// Peaks (BED/narrowPeak); repeat for several cell types' sets, which are merged. Without
    /// peaks, peaks are called on the bigWig/bedGraph accessibility tracks.
    #[arg(help_heading = "Inputs", long)]
    pub peaks: Vec<PathBuf>,
    /// Accessibility per cell type: CELLTYPE=PATH or CELLTYPE=KIND:PATH, KIND one of bigwig,
    /// bedgraph, fragments, bam, counts (guessed from the file name when left out). Repeat per cell type.
    #[arg(help_heading = "Inputs", long, value_parser = AccessibilitySource::parse)]
    pub accessibility: Vec<AccessibilitySource>,
    /// Reuse regions, raw accessibility and motif scores from an earlier run's *.regions.tsv.
    #[arg(help_heading = "Inputs", long, conflicts_with_all = ["peaks", "accessibility", "motifs", "motif_clusters"])]
    pub reuse_regions: Option<PathBuf>,
    /// Motif database (MEME, JASPAR, TRANSFAC or HOMER; sniffed from the content).
    #[arg(
        help_heading = "Inputs",
        long,
        required_unless_present = "reuse_regions"
    )]
    pub motifs: Option<PathBuf>,
    /// Output dataset (safetensors).
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,
    /// Samples table (default: OUTPUT with .samples.tsv).
    #[arg(help_heading = "Outputs", long)]
    pub samples_output: Option<PathBuf>,
    /// Per-region table (default: OUTPUT with .regions.tsv).
    #[arg(help_heading = "Outputs", long)]
    pub regions_output: Option<PathBuf>,
    /// Scan and count part I of N only, into -o (a part file): the regions' motif scores in
    /// chunks, the accessibility of every Nth cell type. Run 1/N .. N/N as separate jobs, then
    /// --gather the parts with the same arguments (docs/scale-out.md).
    #[arg(help_heading = "Outputs", long, value_name = "I/N", conflicts_with_all = ["gather", "reuse_regions", "samples_output", "regions_output"])]
    pub shard: Option<luminome_cli::shard::ShardSpec>,
    /// Write the dataset one run with these arguments writes, from the part files of --shard
    /// 1/N .. N/N instead of scanning and counting (the same bytes).
    #[arg(help_heading = "Inputs", long, value_name = "PARTS", num_args = 1.., conflicts_with = "reuse_regions")]
    pub gather: Vec<PathBuf>,
    /// Motif file format, when sniffing is not wanted: meme, jaspar, transfac, homer.
    #[arg(help_heading = "Motif options", long, value_parser = parse_motif_format)]
    pub motif_format: Option<MotifFormat>,
    /// Motif → cluster table (CSV/TSV with a header), collapsing motif columns into clusters.
    #[arg(help_heading = "Inputs", long)]
    pub motif_clusters: Option<PathBuf>,
    /// Column of the cluster table holding motif names.
    #[arg(help_heading = "Motif options", long, default_value = "Motif")]
    pub cluster_motif_column: String,
    /// Column of the cluster table holding cluster names.
    #[arg(help_heading = "Motif options", long, default_value = "Name")]
    pub cluster_name_column: String,
    /// Gene TSS: GTF, GFF3 or a BED-like table (chrom start end name score strand ...).
    #[arg(help_heading = "Inputs", long, required_unless_present = "tile_step")]
    pub genes: Option<PathBuf>,
    /// Instead of genes: windows tiled along every reference sequence, centred every this many
    /// bp (for masked-region pretraining, which needs no expression); tiles without any region
    /// in their window are left out (counted).
    #[arg(help_heading = "Gene and expression options", long, conflicts_with_all = ["genes", "gene_type", "expression", "expression_matrix"])]
    pub tile_step: Option<u64>,
    #[arg(
        help_heading = "Gene and expression options",
        long,
        value_enum,
        default_value = "auto"
    )]
    genes_format: GenesFormatArg,
    /// GTF/GFF3 feature type whose 5' end is the TSS.
    #[arg(
        help_heading = "Gene and expression options",
        long,
        default_value = "gene"
    )]
    pub tss_feature: String,
    /// For a BED gene table: where the TSS is.
    #[arg(
        help_heading = "Gene and expression options",
        long,
        value_enum,
        default_value = "five-prime"
    )]
    bed_tss: BedTssArg,
    /// Keep only genes of these types (gene_type / gene_biotype); repeatable.
    #[arg(help_heading = "Gene and expression options", long)]
    pub gene_type: Vec<String>,
    /// Expression per cell type: CELLTYPE=PATH, or CELLTYPE=PATH:COLUMN to read that column
    /// (header name or 1-based index) of a table with one column per cell type. Joined on gene
    /// symbol, then gene id (also without an Ensembl version suffix).
    #[arg(help_heading = "Inputs", long, value_parser = parse_expression)]
    pub expression: Vec<ExpressionInput>,
    /// One expression table with a column per cell type, named exactly as the --accessibility
    /// cell types (HPA cell-line tables, GTEx, any counts matrix).
    #[arg(help_heading = "Inputs", long, conflicts_with = "expression")]
    pub expression_matrix: Option<PathBuf>,
    /// Expression table gene column (header name or 1-based index).
    #[arg(
        help_heading = "Gene and expression options",
        long,
        default_value = "1"
    )]
    pub expression_gene_column: String,
    /// Expression table value column (header name, 1-based index or "last").
    #[arg(
        help_heading = "Gene and expression options",
        long,
        default_value = "last"
    )]
    pub expression_value_column: String,
    #[arg(
        help_heading = "Gene and expression options",
        long,
        value_enum,
        default_value = "log1p"
    )]
    expression_transform: TransformArg,
    /// A gene name on several rows of an expression table: error, or sum / max / first.
    #[arg(
        help_heading = "Gene and expression options",
        long,
        value_enum,
        default_value = "error"
    )]
    expression_duplicates: DupArg,
    /// Keep (gene, cell type) pairs without an expression value, with NaN (default: leave them out).
    #[arg(help_heading = "Gene and expression options", long)]
    pub keep_missing_expression: bool,
    /// Window around each TSS, bp (centred).
    #[arg(help_heading = "Region options", long, default_value_t = 2_000_000)]
    pub window: u64,
    /// Regions per gene (N); fewer are padded and masked.
    #[arg(help_heading = "Region options", long, default_value_t = 200)]
    pub n_regions: usize,
    /// How the N regions are chosen.
    #[arg(
        help_heading = "Region options",
        long,
        value_enum,
        default_value = "distance"
    )]
    select: SelectArg,
    /// Hit p-value threshold (per position and strand).
    #[arg(
        help_heading = "Motif options",
        long,
        default_value_t = 1e-4,
        conflicts_with = "score_threshold"
    )]
    pub pvalue: f64,
    /// Hit log2-odds score threshold instead of a p-value.
    #[arg(help_heading = "Motif options", long)]
    pub score_threshold: Option<f64>,
    /// How hits become one value per (region, motif).
    #[arg(
        help_heading = "Motif options",
        long,
        value_enum,
        default_value = "sum"
    )]
    aggregation: AggArg,
    /// Pseudocount added to each motif position (spread by the background, as FIMO).
    #[arg(help_heading = "Motif options", long, default_value_t = 0.1)]
    pub pseudocount: f64,
    /// Background base frequencies for log-odds and p-values.
    #[arg(
        help_heading = "Motif options",
        long,
        value_enum,
        default_value = "uniform"
    )]
    background: BgArg,
    /// Accessibility normalisation.
    #[arg(
        help_heading = "Accessibility options",
        long,
        value_enum,
        default_value = "logcpm"
    )]
    normalisation: NormArg,
    /// How the written features are scaled: raw, or as published GET checkpoints expect them
    /// (get, get-quantitative; docs/regions.md). The regions table keeps raw values either way.
    #[arg(
        help_heading = "Motif options",
        long,
        value_enum,
        default_value = "raw"
    )]
    feature_scale: ScaleArg,
    /// Peaks wider than this (bp) are reported and left out.
    #[arg(help_heading = "Region options", long, default_value_t = 10_000)]
    pub max_region_width: u64,
    /// Merge peaks closer than this (bp); 0 merges overlapping/touching peaks only.
    #[arg(help_heading = "Region options", long, default_value_t = 0)]
    pub merge_gap: u64,
    /// Peak calling: signal threshold as a multiple of the chromosome's mean per-base signal.
    #[arg(help_heading = "Region options", long, default_value_t = 3.0)]
    pub call_fold: f64,
    /// Peak calling: join runs closer than this (bp).
    #[arg(help_heading = "Region options", long, default_value_t = 100)]
    pub call_merge_gap: u64,
    /// Peak calling: drop runs shorter than this (bp).
    #[arg(help_heading = "Region options", long, default_value_t = 150)]
    pub call_min_width: u64,
    /// Map accessibility files' chromosome names onto the reference's.
    #[arg(
        help_heading = "Accessibility options",
        long,
        value_enum,
        default_value = "exact"
    )]
    acc_chrom_names: RenameArg,
    /// Fragments files: count Tn5 insertions or whole fragments.
    #[arg(
        help_heading = "Accessibility options",
        long,
        value_enum,
        default_value = "insertions"
    )]
    fragment_mode: FragArg,
    /// BAM: minimum mapping quality.
    #[arg(help_heading = "Accessibility options", long, default_value_t = 30)]
    pub min_mapq: u8,
    /// BAM: keep reads flagged as duplicates.
    #[arg(help_heading = "Accessibility options", long)]
    pub keep_duplicates: bool,
    /// Regions are packed into chunks of about this many bp and scanned in parallel; a
    /// --shard part is whole chunks (smaller chunks cut a small region set into more parts).
    /// Sums of several hits can differ in the last float bit between chunk sizes.
    #[arg(help_heading = "Runtime", long, default_value_t = 1 << 18, value_parser = clap::value_parser!(u64).range(1..))]
    pub scan_chunk_bp: u64,
    /// Threads (default: all cores).
    #[arg(help_heading = "Runtime", long)]
    pub threads: Option<usize>,
    /// No progress or summary on stderr (errors still print).
    #[arg(help_heading = "Runtime", short, long)]
    pub quiet: bool,
}

/// `CELLTYPE=PATH` or `CELLTYPE=PATH:COLUMN`: a value that names an existing file is a path
/// (so paths with a colon work); otherwise the part after the last colon is the column.
fn parse_expression(s: &str) -> Result<ExpressionInput, String> {
    let (cell_type, v) = s
        .split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| format!("{s:?}: expected CELLTYPE=PATH or CELLTYPE=PATH:COLUMN"))?;
    let (path, column) = match v.rsplit_once(':') {
        Some((p, c)) if !std::path::Path::new(v).exists() && !p.is_empty() && !c.is_empty() => {
            (p, Some(c.to_string()))
        }
        _ => (v, None),
    };
    Ok(ExpressionInput {
        cell_type: cell_type.to_string(),
        path: PathBuf::from(path),
        column,
    })
}

fn parse_motif_format(s: &str) -> Result<MotifFormat, String> {
    MotifFormat::parse(s).ok_or_else(|| format!("{s:?}: expected meme, jaspar, transfac or homer"))
}

/// The most regions per sample `--n-regions` takes.
pub const MAX_REGIONS: usize = 1 << 14;

impl Args {
    /// Refuses numbers and combinations no run can take.
    fn check_values(&self) -> Result<()> {
        if self.n_regions == 0 || self.window == 0 {
            bail!("--n-regions and --window must be positive");
        }
        if self.tile_step == Some(0) {
            bail!("--tile-step must be positive");
        }
        if !(self.pvalue > 0.0 && self.pvalue < 1.0) {
            bail!("--pvalue must be between 0 and 1");
        }
        if !(self.pseudocount.is_finite() && self.pseudocount >= 0.0) {
            bail!(
                "--pseudocount must be a finite number ≥ 0, got {}",
                self.pseudocount
            );
        }
        if let Some(t) = self.score_threshold.filter(|t| !t.is_finite()) {
            bail!("--score-threshold must be a finite log2-odds score, got {t}");
        }
        // N regions × features per sample are held in memory; far beyond any window's peaks.
        if self.n_regions > MAX_REGIONS {
            bail!(
                "--n-regions {} is more than {MAX_REGIONS} (each sample holds N × features values in memory)",
                self.n_regions
            );
        }
        if self.feature_scale != ScaleArg::Raw
            && self.accessibility.is_empty()
            && self.reuse_regions.is_none()
        {
            bail!(
                "--feature-scale {} needs accessibility per cell type (--accessibility \
                 CELLTYPE=PATH, or --reuse-regions of a run that had it): GET's regions are the \
                 regions accessible in each cell type",
                match self.feature_scale {
                    ScaleArg::GetQuantitative => "get-quantitative",
                    _ => "get",
                }
            );
        }
        Ok(())
    }

    /// The samples and regions tables' paths (beside `-o` by default), checked to be three
    /// different files, none of them an input, with the right extensions.
    fn side_outputs(&self) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
        let samples_output = self
            .samples_output
            .clone()
            .unwrap_or_else(|| side_output(&self.output, "samples.tsv"));
        let regions_output = self
            .regions_output
            .clone()
            .unwrap_or_else(|| side_output(&self.output, "regions.tsv"));
        if samples_output == self.output
            || regions_output == self.output
            || samples_output == regions_output
        {
            bail!("the dataset, samples and regions outputs must be three different files");
        }
        let mut inputs: Vec<(&str, &std::path::Path)> = vec![("--reference", &self.reference)];
        inputs.extend(self.peaks.iter().map(|p| ("--peaks", p.as_path())));
        inputs.extend(
            self.accessibility
                .iter()
                .map(|a| ("--accessibility", a.path.as_path())),
        );
        inputs.extend(
            self.expression
                .iter()
                .map(|e| ("--expression", e.path.as_path())),
        );
        for (flag, p) in [
            ("--reuse-regions", &self.reuse_regions),
            ("--motifs", &self.motifs),
            ("--motif-clusters", &self.motif_clusters),
            ("--genes", &self.genes),
            ("--expression-matrix", &self.expression_matrix),
        ] {
            if let Some(p) = p {
                inputs.push((flag, p.as_path()));
            }
        }
        inputs.extend(self.gather.iter().map(|p| ("--gather", p.as_path())));
        luminome_io::atomic::check_outputs_distinct(
            &[
                ("-o", self.output.as_path()),
                ("the samples table", samples_output.as_path()),
                ("the regions table", regions_output.as_path()),
            ],
            &inputs,
        )?;
        {
            use luminome_io::atomic::{check_extension, OutputKind};
            check_extension("-o", &self.output, OutputKind::Safetensors)?;
            check_extension("the samples table", &samples_output, OutputKind::Tsv)?;
            check_extension("the regions table", &regions_output, OutputKind::Tsv)?;
        }
        Ok((samples_output, regions_output))
    }

    pub fn into_config(self, command_line: String) -> Result<Config> {
        self.check_values()?;
        let (samples_output, regions_output) = self.side_outputs()?;
        Ok(Config {
            reference: self.reference,
            peaks: self.peaks,
            accessibility: self.accessibility,
            reuse_regions: self.reuse_regions,
            motifs: self.motifs,
            motif_format: self.motif_format,
            clusters: self.motif_clusters,
            cluster_motif_column: self.cluster_motif_column,
            cluster_name_column: self.cluster_name_column,
            genes_format: match self.genes_format {
                GenesFormatArg::Auto => self
                    .genes
                    .as_deref()
                    .map_or(TssFormat::Bed, TssFormat::from_path),
                GenesFormatArg::Gtf => TssFormat::Gtf,
                GenesFormatArg::Gff3 => TssFormat::Gff3,
                GenesFormatArg::Bed => TssFormat::Bed,
            },
            genes: self.genes,
            tile_step: self.tile_step,
            tss_feature: self.tss_feature,
            bed_tss_mode: match self.bed_tss {
                BedTssArg::FivePrime => BedTssMode::FivePrime,
                BedTssArg::Center => BedTssMode::Center,
            },
            gene_types: self.gene_type,
            expression: self.expression,
            expression_matrix: self.expression_matrix,
            expression_gene_column: ColumnRef::parse(&self.expression_gene_column),
            expression_value_column: ColumnRef::parse(&self.expression_value_column),
            expression_transform: match self.expression_transform {
                TransformArg::Log1p => ExpressionTransform::Log1p,
                TransformArg::Log10p1 => ExpressionTransform::Log10p1,
                TransformArg::None => ExpressionTransform::None,
            },
            expression_duplicates: match self.expression_duplicates {
                DupArg::Error => Duplicates::Error,
                DupArg::Sum => Duplicates::Sum,
                DupArg::Max => Duplicates::Max,
                DupArg::First => Duplicates::First,
            },
            keep_missing_expression: self.keep_missing_expression,
            window: self.window,
            n_regions: self.n_regions,
            selection: match self.select {
                SelectArg::Distance => Selection::Distance,
                SelectArg::Accessibility => Selection::Accessibility,
            },
            threshold: match self.score_threshold {
                Some(s) => Threshold::Score(s),
                None => Threshold::PValue(self.pvalue),
            },
            aggregation: match self.aggregation {
                AggArg::Sum => Aggregation::Sum,
                AggArg::Max => Aggregation::Max,
                AggArg::Count => Aggregation::Count,
            },
            pseudocount: self.pseudocount,
            background: match self.background {
                BgArg::Uniform => BackgroundChoice::Uniform,
                BgArg::Genome => BackgroundChoice::Genome,
            },
            normalisation: match self.normalisation {
                NormArg::Logcpm => Normalisation::LogCpm,
                NormArg::GetLog10cpm => Normalisation::GetLog10Cpm,
                NormArg::Raw => Normalisation::Raw,
            },
            feature_scale: match self.feature_scale {
                ScaleArg::Raw => FeatureScale::Raw,
                ScaleArg::Get => FeatureScale::Get,
                ScaleArg::GetQuantitative => FeatureScale::GetQuantitative,
            },
            max_region_width: self.max_region_width,
            merge_gap: self.merge_gap,
            call: CallParams {
                fold: self.call_fold,
                merge_gap: self.call_merge_gap,
                min_width: self.call_min_width,
            },
            rename: match self.acc_chrom_names {
                RenameArg::Exact => ChromRename::Exact,
                RenameArg::AddChr => ChromRename::AddChr,
                RenameArg::RemoveChr => ChromRename::RemoveChr,
            },
            fragment_mode: match self.fragment_mode {
                FragArg::Insertions => FragmentMode::Insertions,
                FragArg::Fragments => FragmentMode::Fragments,
            },
            bam: BamFilter {
                min_mapq: self.min_mapq,
                drop_duplicates: !self.keep_duplicates,
            },
            output: self.output,
            samples_output,
            regions_output,
            scan_chunk_bp: self.scan_chunk_bp as usize,
            shard: self.shard,
            gather: self.gather,
            command_line,
        })
    }
}
