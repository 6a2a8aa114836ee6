# luminome-mask-pairs: paired-strand masked-LM examples, one dataset per entry of
# config["mask_pairs"]["datasets"]: a FASTA and its complementary strand (fasta), paired
# files (fasta_a + fasta_b), NAME/1 NAME/2 records (paired), or reference/alternate windows
# around the SNVs of a VCF/BCF/table (reference + variants).
# Outputs per dataset id: {outdir}/mask_pairs/{id}.safetensors and {id}.index.tsv.


rule mask_pairs:
    input:
        unpack(mask_pairs_inputs),
    output:
        pairs=f"{OUTDIR}/mask_pairs/{{id}}.safetensors",
        index=f"{OUTDIR}/mask_pairs/{{id}}.index.tsv",
    log:
        f"{LOGDIR}/mask_pairs/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(MASK_PAIRS["datasets"]),
    conda:
        "../envs/luminome.yaml"
    threads: MASK_PAIRS["threads"]
    resources:
        mem_mb=MASK_PAIRS["mem_mb"],
    params:
        options=mask_pairs_options,
    shell:
        "luminome-mask-pairs {params.options} --threads {threads}"
        " -o {output.pairs} 2> {log}"


rule mask_pairs_version:
    output:
        f"{OUTDIR}/versions/luminome-mask-pairs.txt",
    log:
        f"{LOGDIR}/versions/luminome-mask-pairs.log",
    conda:
        "../envs/luminome.yaml"
    threads: 1
    shell:
        "luminome-mask-pairs --version > {output} 2> {log}"
