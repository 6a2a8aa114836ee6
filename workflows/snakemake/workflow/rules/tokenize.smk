# luminome-tokenize: DNA to token ids, one dataset per entry of config["tokenize"]["datasets"].
# Outputs per dataset id: {outdir}/tokenize/{id}.safetensors and {id}.index.tsv.
# Input and option helpers (tokenize_*) are in common.smk, as the linter asks.


rule tokenize:
    input:
        unpack(tokenize_inputs),
    output:
        tokens=f"{OUTDIR}/tokenize/{{id}}.safetensors",
        index=f"{OUTDIR}/tokenize/{{id}}.index.tsv",
    log:
        f"{LOGDIR}/tokenize/{{id}}.log",
    wildcard_constraints:
        id="|".join(re.escape(dataset_id) for dataset_id in TOKENIZE["datasets"]),
    conda:
        "../envs/luminome.yaml"
    threads: TOKENIZE["threads"]
    resources:
        mem_mb=TOKENIZE["mem_mb"],
    params:
        options=tokenize_options,
    shell:
        "luminome-tokenize {input.sequences} {params.options}"
        " --threads {threads} -o {output.tokens} 2> {log}"


rule tokenize_version:
    output:
        f"{OUTDIR}/versions/luminome-tokenize.txt",
    log:
        f"{LOGDIR}/versions/luminome-tokenize.log",
    conda:
        "../envs/luminome.yaml"
    threads: 1
    shell:
        "luminome-tokenize --version > {output} 2> {log}"
