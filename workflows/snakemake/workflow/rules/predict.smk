# luminome-predict: class probabilities per record of a token dataset from a classifier
# trained by train_classify. Runs are config["predict"]["runs"] entries; outputs per run id:
# {outdir}/predict/{id}.predictions.tsv and, for runs with `metrics: true` (labelled
# datasets), {id}.metrics.tsv. Two rules because a rule's outputs cannot depend on its run.
# With `shards: N` a run is scored as N predict_shard jobs (whole batches each) that the run's
# rule joins (--gather): the same bytes as one job, and a failed shard reruns alone.


rule predict_shard:
    input:
        unpack(model_inputs(PREDICT_RUNS)),
    output:
        part=temp(
            f"{OUTDIR}/predict/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/predict/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(PREDICT_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: PREDICT["threads"]
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gpu_count(PREDICT),
    params:
        options=predict_options,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule predict_with_metrics:
    input:
        unpack(model_inputs(PREDICT_RUNS)),
        parts=shard_parts(PREDICT_RUNS, f"{OUTDIR}/predict"),
    output:
        predictions=report(
            f"{OUTDIR}/predict/{{id}}.predictions.tsv",
            caption="../report/predictions.rst",
            category="Predictions",
            subcategory="{id}",
        ),
        metrics=report(
            f"{OUTDIR}/predict/{{id}}.metrics.tsv",
            caption="../report/prediction_metrics.rst",
            category="Predictions",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/predict/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(PREDICT_WITH_METRICS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(PREDICT_RUNS)
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gathered_gpus(PREDICT_RUNS),
    params:
        options=gathered_options(PREDICT_RUNS, predict_options),
        gather=gather_parts,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --metrics {output.metrics} --threads {threads} {params.gather}"
        " -o {output.predictions} 2> {log}"


rule predict:
    input:
        unpack(model_inputs(PREDICT_RUNS)),
        parts=shard_parts(PREDICT_RUNS, f"{OUTDIR}/predict"),
    output:
        predictions=report(
            f"{OUTDIR}/predict/{{id}}.predictions.tsv",
            caption="../report/predictions.rst",
            category="Predictions",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/predict/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(PREDICT_WITHOUT_METRICS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(PREDICT_RUNS)
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gathered_gpus(PREDICT_RUNS),
    params:
        options=gathered_options(PREDICT_RUNS, predict_options),
        gather=gather_parts,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --threads {threads} {params.gather} -o {output.predictions} 2> {log}"


# Variant effects: config["predict"]["variants"] entries score the SNV windows of a
# mask_pairs dataset (reference + variants) with a train_bistrand model. Outputs per run id:
# {outdir}/predict/variants/{id}.scores.tsv (one row per ALT allele), {id}.scores.vcf.gz (the
# input's records with LLR, LLR_A, LLR_B and REF_MATCH in INFO) and {id}.llr.bedgraph.
# With `shards: N` the scoring runs as N jobs (predict_variants_shard, each whole batches of
# the dataset's records) whose parts predict_variants joins (--gather): the same bytes as one
# job, and a failed shard reruns alone.
rule predict_variants_shard:
    input:
        unpack(variant_inputs),
    output:
        part=temp(
            f"{OUTDIR}/predict/variants/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/predict/variants/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(VARIANT_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: PREDICT["threads"]
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gpu_count(PREDICT),
    params:
        options=variant_options,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " --variants {input.variants} {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule predict_variants:
    input:
        unpack(variant_inputs),
        parts=shard_parts(VARIANT_RUNS, f"{OUTDIR}/predict/variants"),
    output:
        scores=report(
            f"{OUTDIR}/predict/variants/{{id}}.scores.tsv",
            caption="../report/variant_scores.rst",
            category="Variant effects",
            subcategory="{id}",
        ),
        vcf=f"{OUTDIR}/predict/variants/{{id}}.scores.vcf.gz",
        bedgraph=f"{OUTDIR}/predict/variants/{{id}}.llr.bedgraph",
    log:
        f"{LOGDIR}/predict/variants/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(VARIANT_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(VARIANT_RUNS)
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gathered_gpus(VARIANT_RUNS),
    params:
        options=gathered_options(VARIANT_RUNS, variant_options),
        gather=gather_parts,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " --variants {input.variants} {params.options} --threads {threads} {params.gather}"
        " -o {output.scores} --vcf {output.vcf} --bedgraph {output.bedgraph} 2> {log}"


# Expression: config["predict"]["expression"] entries run an expression model (train_expression)
# on a region dataset (regions). Outputs per run id: {outdir}/predict/expression/{id}.predictions.tsv
# (one row per sample) and {id}.metrics.tsv (overall and per cell type); `subset: test` scores
# only the samples the model held out. With `shards: N`, N predict_expression_shard jobs (whole
# batches each) that predict_expression gathers: the same bytes, metrics included.
rule predict_expression_shard:
    input:
        unpack(expression_model_inputs(EXPRESSION_PREDICT_RUNS)),
    output:
        part=temp(
            f"{OUTDIR}/predict/expression/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/predict/expression/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(EXPRESSION_PREDICT_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: PREDICT["threads"]
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gpu_count(PREDICT),
    params:
        options=expression_predict_options,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule predict_expression:
    input:
        unpack(expression_model_inputs(EXPRESSION_PREDICT_RUNS)),
        parts=shard_parts(EXPRESSION_PREDICT_RUNS, f"{OUTDIR}/predict/expression"),
    output:
        predictions=report(
            f"{OUTDIR}/predict/expression/{{id}}.predictions.tsv",
            caption="../report/predictions.rst",
            category="Predictions",
            subcategory="{id}",
        ),
        metrics=report(
            f"{OUTDIR}/predict/expression/{{id}}.metrics.tsv",
            caption="../report/prediction_metrics.rst",
            category="Predictions",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/predict/expression/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(EXPRESSION_PREDICT_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(EXPRESSION_PREDICT_RUNS)
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gathered_gpus(EXPRESSION_PREDICT_RUNS),
    params:
        options=gathered_options(EXPRESSION_PREDICT_RUNS, expression_predict_options),
        gather=gather_parts,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --metrics {output.metrics} --threads {threads}"
        " -o {output.predictions} {params.gather} 2> {log}"


rule predict_version:
    output:
        f"{OUTDIR}/versions/luminome-predict.txt",
    log:
        f"{LOGDIR}/versions/luminome-predict.log",
    conda:
        "../envs/luminome.yaml"
    threads: 1
    shell:
        "luminome-predict --version > {output} 2> {log}"


# Tabular models: config["predict"]["tabular"] entries run a train_tabular model (a run without
# folds) on a labelled table. Outputs per run id: {outdir}/predict/tabular/{id}.predictions.tsv
# (sample, label, prob_<class>..., predicted) and {id}.metrics.tsv. With `shards: N`, N
# predict_tabular_shard jobs that predict_tabular gathers: the same bytes, metrics included.
rule predict_tabular_shard:
    input:
        unpack(tabular_model_inputs(TABULAR_PREDICT_RUNS)),
    output:
        part=temp(
            f"{OUTDIR}/predict/tabular/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/predict/tabular/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(TABULAR_PREDICT_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: PREDICT["threads"]
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gpu_count(PREDICT),
    params:
        options=tabular_predict_options,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.table}"
        " {params.options} --threads {threads}"
        " --shard {wildcards.shard}/{wildcards.shards} -o {output.part} 2> {log}"


rule predict_tabular:
    input:
        unpack(tabular_model_inputs(TABULAR_PREDICT_RUNS)),
        parts=shard_parts(TABULAR_PREDICT_RUNS, f"{OUTDIR}/predict/tabular"),
    output:
        predictions=report(
            f"{OUTDIR}/predict/tabular/{{id}}.predictions.tsv",
            caption="../report/predictions.rst",
            category="Predictions",
            subcategory="{id}",
        ),
        metrics=report(
            f"{OUTDIR}/predict/tabular/{{id}}.metrics.tsv",
            caption="../report/prediction_metrics.rst",
            category="Predictions",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/predict/tabular/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(TABULAR_PREDICT_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: gathered_threads(TABULAR_PREDICT_RUNS)
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gathered_gpus(TABULAR_PREDICT_RUNS),
    params:
        options=gathered_options(TABULAR_PREDICT_RUNS, tabular_predict_options),
        gather=gather_parts,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.table}"
        " {params.options} --metrics {output.metrics} --threads {threads}"
        " -o {output.predictions} {params.gather} 2> {log}"


# Retrieval: config["predict"]["retrieval"] entries rank a corpus (a tokenize dataset, or the
# pairs' own passages) for the queries of a pairs dataset with a train_dual model. Outputs per
# run id: {outdir}/predict/retrieval/{id}.ranks.tsv (one line per query), {id}.metrics.tsv
# (full-corpus and in-batch metrics) and {id}.embeddings.safetensors (+ .embeddings.index.tsv).
rule predict_retrieval:
    input:
        unpack(retrieval_inputs),
    output:
        ranks=report(
            f"{OUTDIR}/predict/retrieval/{{id}}.ranks.tsv",
            caption="../report/retrieval_ranks.rst",
            category="Retrieval",
            subcategory="{id}",
        ),
        metrics=report(
            f"{OUTDIR}/predict/retrieval/{{id}}.metrics.tsv",
            caption="../report/prediction_metrics.rst",
            category="Retrieval",
            subcategory="{id}",
        ),
        embeddings=f"{OUTDIR}/predict/retrieval/{{id}}.embeddings.safetensors",
        embeddings_index=f"{OUTDIR}/predict/retrieval/{{id}}.embeddings.index.tsv",
    log:
        f"{LOGDIR}/predict/retrieval/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(RETRIEVAL_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: PREDICT["threads"]
    resources:
        mem_mb=PREDICT["mem_mb"],
        gpu=gpu_count(PREDICT),
    params:
        options=retrieval_options,
    shell:
        "luminome-predict --checkpoint {input.checkpoint} --dataset {input.dataset}"
        " {params.options} --metrics {output.metrics} --embeddings {output.embeddings}"
        " --threads {threads} -o {output.ranks} 2> {log}"
