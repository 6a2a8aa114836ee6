# luminome-tokenize: DNA to token ids, one dataset per entry of config["tokenize"]["datasets"].
# Outputs per dataset id: {outdir}/tokenize/{id}.safetensors and {id}.index.tsv.
# Input and option helpers (tokenize_*) are in common.smk, as the linter asks.
# With `shards: N` a dataset is tokenized as N tokenize_shard jobs (blocks of 1,024 records or
# windows dealt round robin) that the tokenize rule joins (--gather): the same bytes as one job,
# and a failed shard reruns alone.


rule tokenize_shard:
    input:
        unpack(tokenize_inputs),
    output:
        part=temp(
            f"{OUTDIR}/tokenize/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/tokenize/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id="|".join(re.escape(dataset_id) for dataset_id in TOKENIZE["datasets"]),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: TOKENIZE["threads"]
    resources:
        mem_mb=TOKENIZE["mem_mb"],
    params:
        options=tokenize_options,
    shell:
        "luminome-tokenize {input.sequences} {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule tokenize:
    input:
        unpack(tokenize_inputs),
        parts=shard_parts(TOKENIZE["datasets"], f"{OUTDIR}/tokenize"),
    output:
        tokens=f"{OUTDIR}/tokenize/{{id}}.safetensors",
        index=f"{OUTDIR}/tokenize/{{id}}.index.tsv",
    log:
        f"{LOGDIR}/tokenize/{{id}}.log",
    wildcard_constraints:
        id="|".join(re.escape(dataset_id) for dataset_id in TOKENIZE["datasets"]),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(TOKENIZE["datasets"], TOKENIZE)
    resources:
        mem_mb=TOKENIZE["mem_mb"],
    params:
        options=tokenize_options,
        gather=gather_parts,
    shell:
        "luminome-tokenize {input.sequences} {params.options}"
        " --threads {threads} -o {output.tokens} {params.gather} 2> {log}"


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
