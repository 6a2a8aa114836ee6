//! The `luminome-mask-pairs` command line.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use luminome_io::pair_dataset::Pairing;

const EXAMPLES: &str = "\
Examples:
  # a genome and its complementary strand, 512-base windows, 15 % of positions masked on both
  # (outputs go to an existing folder: mkdir -p work)
  luminome-mask-pairs --fasta test-data/ecoli/ecoli_50kb.fa.gz --window 512 -o work/ecoli_pairs.safetensors

  # one window per SNV of a VCF (or a CHROM POS ID REF ALT table), the variant site masked
  luminome-mask-pairs --reference test-data/celegans/celegans_small.fa \\
      --variants test-data/celegans/celegans_small.snv.vcf --window 512 -o work/snv_pairs.safetensors

  # the same SNVs for a published model (its own vocabulary, read from its checkpoint), scored
  # zero-shot by luminome-predict --checkpoint hf:kuleshov-group/PlantCaduceus_l20
  luminome-mask-pairs --reference genome.fa --variants snvs.vcf.gz --window 512 \\
      --like hf:kuleshov-group/PlantCaduceus_l20 -o snv_pairs.plantcad.safetensors

  # in-silico saturation mutagenesis: every base of the BED intervals to each other base, one
  # window per base (index column line = the site's number), scored zero-shot by luminome-predict
  luminome-mask-pairs --reference test-data/celegans/celegans_small.fa --saturate regions.bed \\
      --window 512 --like hf:kuleshov-group/PlantCaduceus_l20 -o work/saturated.safetensors

  # two FASTA files whose records pair up in order (same names, same lengths)
  luminome-mask-pairs --fasta-a hap1.fa --fasta-b hap2.fa -o haps.safetensors

Outputs: OUTPUT (safetensors: ids_a, ids_b, labels_a, labels_b (int8, -100 off the masked
positions), mask_positions, attention_mask, all [N, window]) and OUTPUT minus .safetensors +
.index.tsv (record, name, window_chrom/window_start/window_end 0-based half-open as in BED,
window_region chr:start-end 1-based as samtools/IGV read it, site, variant_id, chrom, pos, ref,
alt, ref_match, line, info_KEY...). Strand B is stored in A's orientation: index i of both
strands is one base pair, which is why masking index i on both hides it from both.
In Python: safetensors.numpy.load_file('work/ecoli_pairs.safetensors')['ids_a']";

/// Where masked positions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MaskArg {
    /// --mask-fraction of the positions where both strands have A/C/G/T.
    Random,
    /// Exactly the variant site (variant windows only).
    VariantSite,
}

/// What to do with a variant whose REF disagrees with the reference FASTA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RefMismatch {
    /// Keep it, with ref_match 0 in the index (and the scores), and count it.
    Flag,
    /// Leave it out and count it.
    Skip,
    /// Stop with an error naming the file and line.
    Error,
}

/// Windows that reach past a contig end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContigEnds {
    /// Pad the missing part (attention 0); the variant stays at the centre.
    Pad,
    /// Leave the variant out (counted).
    Skip,
}

/// How variant chromosome names are matched to the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChromNames {
    /// Names must match exactly.
    Exact,
    /// Add or remove a `chr` prefix when only that makes a name match (chrI ↔ I).
    ToggleChr,
}

/// Builds paired-strand masked-LM examples (the bi-strand masked LM's input).
#[derive(Debug, Clone, Parser)]
#[command(name = "luminome-mask-pairs", version, about, after_help = EXAMPLES)]
pub struct Args {
    /// FASTA/FASTQ (any compression): each record in windows, strand B its complement.
    #[arg(long, help_heading = "Inputs", conflicts_with_all = ["fasta_a", "paired", "reference", "variants"])]
    pub fasta: Option<PathBuf>,

    /// Strand A of paired records (with --fasta-b): records pair up in order.
    #[arg(long, help_heading = "Inputs", requires = "fasta_b", conflicts_with_all = ["paired", "reference", "variants"])]
    pub fasta_a: Option<PathBuf>,

    /// Strand B of paired records (with --fasta-a).
    #[arg(long, help_heading = "Inputs", requires = "fasta_a")]
    pub fasta_b: Option<PathBuf>,

    /// One FASTA whose consecutive records are pairs named NAME/1 and NAME/2 (or /a and /b).
    #[arg(long, help_heading = "Inputs", conflicts_with_all = ["reference", "variants", "saturate"])]
    pub paired: Option<PathBuf>,

    /// Reference FASTA for --variants or --saturate (a .fai beside it is used).
    #[arg(long, help_heading = "Inputs")]
    pub reference: Option<PathBuf>,

    /// Variants: VCF or BCF (plain, gzip, bgzip) or a headerless CHROM POS ID REF ALT table.
    #[arg(long, help_heading = "Inputs", requires = "reference")]
    pub variants: Option<PathBuf>,

    /// In-silico saturation mutagenesis: every base inside these BED intervals (0-based,
    /// half-open) to each of the three other bases, one variant window per base (scored by
    /// luminome-predict as with --variants: a TSV row per substitution, the bedGraph's lowest
    /// LLR per base, --npz an (intervals, 4, L) array); the variant ID is the interval,
    /// chr:start-end 1-based.
    #[arg(
        long,
        help_heading = "Inputs",
        requires = "reference",
        conflicts_with = "variants"
    )]
    pub saturate: Option<PathBuf>,

    /// Output dataset (.safetensors); the index is written beside it.
    #[arg(short, long, help_heading = "Outputs")]
    pub output: PathBuf,

    /// Bases per row.
    #[arg(long, default_value_t = 512, help_heading = "Windows")]
    pub window: usize,

    /// Bases between consecutive windows of a sequence [default: the window].
    #[arg(long, help_heading = "Windows")]
    pub stride: Option<usize>,

    /// Leave out sequence windows with more than this fraction of N (counted).
    #[arg(long, default_value_t = 0.5, help_heading = "Windows")]
    pub max_n_fraction: f64,

    /// Which positions are masked [default: variant-site for --variants, random otherwise].
    #[arg(long, value_enum, help_heading = "Masking")]
    pub mask: Option<MaskArg>,

    /// Fraction of the positions where both strands carry A/C/G/T that are masked (random).
    #[arg(long, default_value_t = 0.15, help_heading = "Masking")]
    pub mask_fraction: f64,

    /// BERT replacement of masked positions: 80 % [MASK], 10 % a random base, 10 % unchanged,
    /// decided once per position for both strands [default: all [MASK]].
    #[arg(long, help_heading = "Masking")]
    pub bert_replacement: bool,

    /// Random seed of the masking (same seed, same bytes).
    #[arg(long, default_value_t = 1, help_heading = "Masking")]
    pub seed: u64,

    /// Variant windows: complement (A the reference window, B its complement) or alleles
    /// (A with the REF allele, B with the ALT allele).
    #[arg(
        long,
        value_enum,
        default_value = "complement",
        help_heading = "Variants"
    )]
    pub pairing: Pairing,

    /// A REF allele that disagrees with the reference FASTA.
    #[arg(long, value_enum, default_value = "flag", help_heading = "Variants")]
    pub ref_mismatch: RefMismatch,

    /// Variant windows that reach past a contig end.
    #[arg(long, value_enum, default_value = "pad", help_heading = "Variants")]
    pub contig_ends: ContigEnds,

    /// How the variants' chromosome names are matched to the reference's.
    #[arg(long, value_enum, default_value = "exact", help_heading = "Variants")]
    pub chrom_names: ChromNames,

    /// INFO fields of a VCF/BCF carried into the index (info_KEY columns) and the scores.
    #[arg(long, value_delimiter = ',', help_heading = "Variants")]
    pub keep_info: Vec<String>,

    /// Write ids in a published model's own vocabulary: its checkpoint folder or
    /// hf:ORG/NAME[@REVISION] (Caduceus, PlantCaduceus; the tokenizer files in it) [default:
    /// the nucleotide vocabulary of Luminome's bi-strand models].
    #[arg(long, help_heading = "Outputs", value_name = "CHECKPOINT")]
    pub like: Option<String>,

    /// Threads for decompression (default: all cores).
    #[arg(long, help_heading = "Runtime")]
    pub threads: Option<usize>,

    /// No summary on stderr.
    #[arg(short, long, help_heading = "Runtime")]
    pub quiet: bool,
}
