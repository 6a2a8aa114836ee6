//! `--format pairs`: (query, passage) tables → retrieval pairs datasets; repeated pairs left
//! out and counted, several positives per query kept, text through a tokenizer.json; bad tables
//! refused naming the line.

mod common;

use common::*;
use luminome_io::retrieval_pairs::{RetrievalPairs, Side};

const PAIRS: &str = "query_id\tquery\tpassage_id\tpassage\n\
q1\tACGTAC\tchr1:0-10\tACGTACGTAA\n\
q2\tgggt\tchr1:10-20\tTTGGGTCCAA\n\
q1\tACGTAC\tchr1:0-10\tACGTACGTAA\n\
q3\tTTGG\tchr1:10-20\tTTGGGTCCAA\n\
q1\tACGTAC\tchr1:20-30\tCCCCACGTAC\n";

#[test]
fn pairs_are_written_with_groups_ids_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "p.tsv", PAIRS.as_bytes());
    let out = dir.path().join("p.safetensors");
    let e = run_ok(&[
        input.to_str().unwrap(),
        "--format",
        "pairs",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(e.contains("line 4 repeats the pair on line 2"), "{e}");
    let d = RetrievalPairs::open(&out).unwrap();
    assert_eq!(d.len(), 4, "the repeated pair is left out");
    assert_eq!(d.groups(Side::Query), &[0, 1, 2, 0]);
    assert_eq!(d.groups(Side::Passage), &[0, 1, 1, 2]);
    let c = &d.meta().counts;
    assert_eq!(c["repeated_pairs_left_out"], 1);
    assert_eq!(c["queries_with_several_positives"], 1);
    // Lowercase is read as bases (gggt → GGGT) with [CLS]/[SEP].
    let b = d.batch(Side::Query, &[1]).unwrap();
    assert_eq!(&b.input_ids[..6], &[1, 7, 7, 7, 8, 2]);
    let index = d.read_index().unwrap();
    assert_eq!(
        index
            .iter()
            .map(|r| (r.query_id.as_str(), r.passage_id.as_str(), r.line))
            .collect::<Vec<_>>(),
        [
            ("q1", "chr1:0-10", 2),
            ("q2", "chr1:10-20", 3),
            ("q3", "chr1:10-20", 5),
            ("q1", "chr1:20-30", 6)
        ]
    );
    if python_has("numpy, safetensors") {
        let code = format!(
            "from safetensors.numpy import load_file; d = load_file({:?}); assert d['query_ids'].shape == (4, 8) and list(d['passage_group']) == [0, 1, 1, 2], d",
            out.display()
        );
        let st = Command::new("python3")
            .args(["-c", &code])
            .status()
            .unwrap();
        assert!(st.success(), "Python could not read the pairs");
    }
}

fn python_has(modules: &str) -> bool {
    luminome_io::python_probe::python_can_import(modules, "reading the pairs from Python")
}

#[test]
fn bad_pair_tables_are_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("p.safetensors");
    let cases: [(&str, &[&str]); 4] = [
        (
            "query\tpsg\nACG\tTTT\n",
            &["line 1", "no \"passage\" column", "query, psg"],
        ),
        (
            "query\tpassage\nACG\tTTT\nACG\t \n",
            &["line 3", "the passage is empty"],
        ),
        (
            "query_id\tquery\tpassage\nq1\tACG\tTTT\nq1\tAGG\tTTT\n",
            &[
                "line 3",
                "query id \"q1\" was given to another query on line 2",
            ],
        ),
        ("query\tpassage\n", &["no pairs"]),
    ];
    for (i, (table, expect)) in cases.iter().enumerate() {
        let input = write(dir.path(), &format!("bad{i}.tsv"), table.as_bytes());
        assert_refused(
            &[
                input.to_str().unwrap(),
                "--format",
                "pairs",
                "-o",
                out.to_str().unwrap(),
            ],
            &out_dir,
            expect,
        );
    }
    let input = write(dir.path(), "ok.tsv", b"query\tpassage\nACG\tTTT\n");
    assert_refused(
        &[
            input.to_str().unwrap(),
            "--format",
            "pairs",
            "--text",
            "-o",
            out.to_str().unwrap(),
        ],
        &out_dir,
        &["--text", "--scheme hf"],
    );
    assert_refused(
        &[
            input.to_str().unwrap(),
            "--format",
            "pairs",
            "--overflow",
            "window",
            "-o",
            out.to_str().unwrap(),
        ],
        &out_dir,
        &["--overflow window"],
    );
}

/// A word-level tokenizer.json over a few English words (BERT-style specials).
const WORDS: &str = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[
{"id":0,"content":"[PAD]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
{"id":1,"content":"[CLS]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
{"id":2,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
{"id":3,"content":"[MASK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
{"id":4,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
"model":{"type":"WordLevel","vocab":{"[PAD]":0,"[CLS]":1,"[SEP]":2,"[MASK]":3,"[UNK]":4,"what":5,"is":6,"dna":7,"a":8,"molecule":9,"gene":10},"unk_token":"[UNK]"}}"#;

#[test]
fn text_pairs_go_through_a_tokenizer_json() {
    let dir = tempfile::tempdir().unwrap();
    let tok = write(dir.path(), "words.json", WORDS.as_bytes());
    let input = write(
        dir.path(),
        "text.tsv",
        "query\tpassage\nWhat is DNA\tDNA is a molecule\nwhat is a gene\tA gene is DNA\n"
            .as_bytes(),
    );
    let out = dir.path().join("t.safetensors");
    run_ok(&[
        input.to_str().unwrap(),
        "--format",
        "pairs",
        "--text",
        "--scheme",
        "hf",
        "--tokenizer",
        tok.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let d = RetrievalPairs::open(&out).unwrap();
    assert!(d.meta().text);
    let b = d.batch(Side::Query, &[0, 1]).unwrap();
    assert_eq!(b.max_length, 6);
    assert_eq!(b.input_ids, vec![1, 5, 6, 7, 2, 0, 1, 5, 6, 8, 10, 2]);
    // The same table read as DNA is refused: words are not bases.
    let e = bin()
        .args([input.to_str().unwrap(), "--format", "pairs", "-o"])
        .arg(dir.path().join("dna.safetensors"))
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(1));
}
