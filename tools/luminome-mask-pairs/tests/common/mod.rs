//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use luminome_io::pair_dataset::{PairDataset, PairIndexRow};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_luminome-mask-pairs"))
}

pub fn test_data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test-data")
        .join(rel)
        .display()
        .to_string()
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

pub fn open(path: &Path) -> (PairDataset, Vec<PairIndexRow>) {
    let ds = PairDataset::open(path).unwrap();
    let index = ds.read_index().unwrap();
    (ds, index)
}

/// Runs a command that must fail: its message contains every `expect`, and the output folder
/// holds nothing.
pub fn assert_refused(args: &[&str], out_dir: &Path, expect: &[&str]) -> String {
    let o = run(args);
    let e = stderr(&o);
    assert!(!o.status.success(), "accepted: {args:?}");
    assert_eq!(o.status.code(), Some(1), "{e}");
    for x in expect {
        assert!(e.contains(x), "{x:?} not in: {e}");
    }
    let left: Vec<_> = std::fs::read_dir(out_dir).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    e
}

/// A reference with two contigs and a VCF exercising every variant rule.
pub fn variant_inputs(dir: &Path) -> (PathBuf, PathBuf) {
    // I: 40 bases; position 21 (1-based) is G, 30 is N. II: 12 bases.
    let reference = write(
        dir,
        "ref.fa",
        ">I\nACGTACGTACGTACGTACGTGCATGCATGNATGCATGCAT\n>II\nTTTTGGGGCCCC\n",
    );
    let vcf = write(
        dir,
        "v.vcf",
        concat!(
            "##fileformat=VCFv4.3\n",
            "##INFO=<ID=AF,Number=A,Type=Float,Description=\"f\">\n",
            "##contig=<ID=I,length=40>\n##contig=<ID=II,length=12>\n",
            "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n",
            "I\t21\trs1\tG\tA,T\t.\tPASS\tAF=0.1,0.2\n",
            "I\t22\trs2\tC\tCA\t.\tPASS\t.\n",
            "I\t23\trs3\tA\t<DEL>\t.\tPASS\t.\n",
            "I\t24\trs4\tC\tG\t.\tPASS\t.\n",
            "I\t30\trs5\tA\tC\t.\tPASS\t.\n",
            "I\t31\trs7\tA\tR\t.\tPASS\t.\n",
            "II\t2\trs6\tT\tC\t.\tPASS\tAF=0.5\n",
        ),
    );
    (reference, vcf)
}
