# luminome-importance: per-token and per-base importance (gates, saliency, ig, ism,
# deepliftshap) of a classifier trained by train_classify. Runs are config["importance"]["runs"]
# entries; outputs per run id: {outdir}/importance/{id}.tsv (per token or base) and {id}.npz
# (contrib / onehot arrays (N, 4, L) for TF-MoDISco-style tools).
# With `shards: N` a run is explained as N importance_shard jobs (whole passes of its selected
# records each) that the importance rule joins (--gather): the same bytes as one job.


rule importance_shard:
    input:
        unpack(model_inputs(IMPORTANCE_RUNS)),
    output:
        part=temp(
            f"{OUTDIR}/importance/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/importance/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(IMPORTANCE_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: IMPORTANCE["threads"]
    resources:
        mem_mb=IMPORTANCE["mem_mb"],
        gpu=gpu_count(IMPORTANCE),
    params:
        options=importance_options,
        # The part keeps what the gather's --npz needs; nothing is written at this path.
        npz=f"{OUTDIR}/importance/{{id}}.npz",
    shell:
        "luminome-importance --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --npz {params.npz} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule importance:
    input:
        unpack(model_inputs(IMPORTANCE_RUNS)),
        parts=shard_parts(IMPORTANCE_RUNS, f"{OUTDIR}/importance"),
    output:
        scores=report(
            f"{OUTDIR}/importance/{{id}}.tsv",
            caption="../report/importance.rst",
            category="Importance",
            subcategory="{id}",
        ),
        npz=f"{OUTDIR}/importance/{{id}}.npz",
    log:
        f"{LOGDIR}/importance/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(IMPORTANCE_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(IMPORTANCE_RUNS, IMPORTANCE)
    resources:
        mem_mb=IMPORTANCE["mem_mb"],
        gpu=gathered_gpus(IMPORTANCE_RUNS, IMPORTANCE),
    params:
        options=gathered_options(IMPORTANCE_RUNS, importance_options),
        gather=gather_parts,
    shell:
        "luminome-importance --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --npz {output.npz} --threads {threads}"
        " -o {output.scores} {params.gather} 2> {log}"


# Expression models: config["importance"]["expression"] entries (method pooling, saliency or
# ig). Outputs per run id: {outdir}/importance/expression/{id}.tsv (regions' pooling weights, or
# the top features per sample), {id}.bedgraph (per region) and {id}.npz. With `shards: N`, N
# importance_expression_shard jobs (each sample's values, whole passes) that
# importance_expression gathers into the same bytes.
rule importance_expression_shard:
    input:
        unpack(expression_model_inputs(EXPRESSION_IMPORTANCE_RUNS)),
    output:
        part=temp(
            f"{OUTDIR}/importance/expression/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/importance/expression/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(EXPRESSION_IMPORTANCE_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: IMPORTANCE["threads"]
    resources:
        mem_mb=IMPORTANCE["mem_mb"],
        gpu=gpu_count(IMPORTANCE),
    params:
        options=expression_importance_options,
    shell:
        "luminome-importance --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule importance_expression:
    input:
        unpack(expression_model_inputs(EXPRESSION_IMPORTANCE_RUNS)),
        parts=shard_parts(EXPRESSION_IMPORTANCE_RUNS, f"{OUTDIR}/importance/expression"),
    output:
        scores=report(
            f"{OUTDIR}/importance/expression/{{id}}.tsv",
            caption="../report/importance.rst",
            category="Importance",
            subcategory="{id}",
        ),
        bedgraph=f"{OUTDIR}/importance/expression/{{id}}.bedgraph",
        npz=f"{OUTDIR}/importance/expression/{{id}}.npz",
    log:
        f"{LOGDIR}/importance/expression/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(EXPRESSION_IMPORTANCE_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(EXPRESSION_IMPORTANCE_RUNS, IMPORTANCE)
    resources:
        mem_mb=IMPORTANCE["mem_mb"],
        gpu=gathered_gpus(EXPRESSION_IMPORTANCE_RUNS, IMPORTANCE),
    params:
        options=gathered_options(
            EXPRESSION_IMPORTANCE_RUNS, expression_importance_options
        ),
        gather=gather_parts,
    shell:
        "luminome-importance --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --bedgraph {output.bedgraph} --npz {output.npz}"
        " --threads {threads} -o {output.scores} {params.gather} 2> {log}"


# Tabular models: config["importance"]["tabular"] entries explain a train_tabular model (a run
# without folds) on a table. Outputs per run id: {outdir}/importance/tabular/{id}.tsv (sample,
# feature, value, importance, rank) and {id}.ranking.tsv (the columns ranked over the samples).
# With `shards: N`, N importance_tabular_shard jobs that importance_tabular gathers.
rule importance_tabular_shard:
    input:
        unpack(tabular_model_inputs(TABULAR_IMPORTANCE_RUNS)),
    output:
        part=temp(
            f"{OUTDIR}/importance/tabular/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/importance/tabular/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(TABULAR_IMPORTANCE_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: IMPORTANCE["threads"]
    resources:
        mem_mb=IMPORTANCE["mem_mb"],
        gpu=gpu_count(IMPORTANCE),
    params:
        options=tabular_importance_options,
    shell:
        "luminome-importance --checkpoint {input.checkpoint} --dataset {input.table}"
        " {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule importance_tabular:
    input:
        unpack(tabular_model_inputs(TABULAR_IMPORTANCE_RUNS)),
        parts=shard_parts(TABULAR_IMPORTANCE_RUNS, f"{OUTDIR}/importance/tabular"),
    output:
        scores=report(
            f"{OUTDIR}/importance/tabular/{{id}}.tsv",
            caption="../report/importance.rst",
            category="Importance",
            subcategory="{id}",
        ),
        ranking=f"{OUTDIR}/importance/tabular/{{id}}.ranking.tsv",
    log:
        f"{LOGDIR}/importance/tabular/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(TABULAR_IMPORTANCE_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(TABULAR_IMPORTANCE_RUNS, IMPORTANCE)
    resources:
        mem_mb=IMPORTANCE["mem_mb"],
        gpu=gathered_gpus(TABULAR_IMPORTANCE_RUNS, IMPORTANCE),
    params:
        options=gathered_options(TABULAR_IMPORTANCE_RUNS, tabular_importance_options),
        gather=gather_parts,
    shell:
        "luminome-importance --checkpoint {input.checkpoint} --dataset {input.table}"
        " {params.options} --ranking {output.ranking} --threads {threads}"
        " -o {output.scores} {params.gather} 2> {log}"


rule importance_version:
    output:
        f"{OUTDIR}/versions/luminome-importance.txt",
    log:
        f"{LOGDIR}/versions/luminome-importance.log",
    conda:
        "../envs/luminome.yaml"
    threads: 1
    shell:
        "luminome-importance --version > {output} 2> {log}"
