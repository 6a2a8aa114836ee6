//! The closed choices of `luminome-regions`' options (clap value enums), translated into the
//! library's types by `Args::into_config`.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum NormArg {
    /// log2(CPM + 1) (the spec's logCPM)
    Logcpm,
    /// log10(CPM + 1) divided by its maximum over regions (GET)
    GetLog10cpm,
    /// raw counts / summed signal
    Raw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ScaleArg {
    /// motif scores as aggregated, accessibility as --normalisation gives it
    Raw,
    /// GET's: per cell type, only regions with accessibility > 0; each motif column divided by
    /// its maximum over those regions (every chromosome) and clipped to 1; accessibility 1
    Get,
    /// as get, accessibility = raw accessibility / its maximum over the sample's regions
    GetQuantitative,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum AggArg {
    Sum,
    Max,
    Count,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum SelectArg {
    Distance,
    Accessibility,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum BgArg {
    Uniform,
    Genome,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum TransformArg {
    Log1p,
    Log10p1,
    None,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum DupArg {
    Error,
    Sum,
    Max,
    First,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum RenameArg {
    Exact,
    AddChr,
    RemoveChr,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum BedTssArg {
    /// the interval's 5' end (start on +, end - 1 on -): gene bounds
    FivePrime,
    /// the interval's centre: TSS windows such as ABC's TSS500bp table
    Center,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum GenesFormatArg {
    Auto,
    Gtf,
    Gff3,
    Bed,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum FragArg {
    Insertions,
    Fragments,
}
