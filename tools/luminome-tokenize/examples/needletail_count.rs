//! The tokenizing benchmark's ceiling: needletail's raw FASTA/FASTQ parse of a file, counting
//! every base (A, C, G, T, other), single-threaded. See bench/tokenize/run.sh.

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: needletail_count FILE");
    let mut reader = needletail::parse_fastx_file(&path).expect("readable FASTA/FASTQ");
    let mut counts = [0u64; 256];
    let mut records = 0u64;
    while let Some(record) = reader.next() {
        let record = record.expect("valid record");
        for &b in record.seq().iter() {
            counts[b as usize] += 1;
        }
        records += 1;
    }
    let total: u64 = counts.iter().sum();
    println!(
        "{records} records, {total} bases, A={} C={} G={} T={}",
        counts[b'A' as usize], counts[b'C' as usize], counts[b'G' as usize], counts[b'T' as usize]
    );
}
