# luminome-train: masked-LM pretraining (mlm) and sequence classifiers (classify) on token
# datasets from the tokenize rule, bi-strand masked LMs (bistrand) on paired datasets from the
# mask_pairs rule, masked-region pretraining (region_pretrain) and expression models
# (expression) on region datasets from the regions rule. Runs are config["train"][<command>]
# entries; outputs per run id: {outdir}/train/<command>/{id}/best.safetensors,
# last.safetensors (+ .config.json, last.state.safetensors for --resume) and metrics.tsv.
# A classify run with `init: <mlm run id>` starts from that run's best checkpoint; an
# expression run with `init: <region_pretrain run id>` from that run's encoder. Tabular runs
# (tabular) read a CSV/TSV table named in the config: with `folds`, cross-validation
# (cv_metrics.tsv, cv_predictions.tsv, fold-<k>/); without, one model (best.safetensors).
# Dual encoders (dual) train on retrieval pairs datasets from the tokenize rule (an entry with
# `--format pairs` in its args).


rule train_mlm:
    input:
        unpack(train_inputs(MLM_RUNS)),
    output:
        best=f"{OUTDIR}/train/mlm/{{id}}/best.safetensors",
        last=f"{OUTDIR}/train/mlm/{{id}}/last.safetensors",
        metrics=report(
            f"{OUTDIR}/train/mlm/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/mlm/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(MLM_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=train_options(MLM_RUNS, "mlm"),
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train mlm --train {input.train} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_classify:
    input:
        unpack(train_inputs(CLASSIFY_RUNS)),
    output:
        best=f"{OUTDIR}/train/classify/{{id}}/best.safetensors",
        last=f"{OUTDIR}/train/classify/{{id}}/last.safetensors",
        metrics=report(
            f"{OUTDIR}/train/classify/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/classify/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(CLASSIFY_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=train_options(CLASSIFY_RUNS, "classify"),
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train classify --train {input.train} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_bistrand:
    input:
        unpack(train_inputs(BISTRAND_RUNS, dataset=paired)),
    output:
        best=f"{OUTDIR}/train/bistrand/{{id}}/best.safetensors",
        last=f"{OUTDIR}/train/bistrand/{{id}}/last.safetensors",
        metrics=report(
            f"{OUTDIR}/train/bistrand/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/bistrand/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(BISTRAND_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=train_options(BISTRAND_RUNS, "bistrand"),
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train bistrand --train {input.train} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_region_pretrain:
    input:
        unpack(train_inputs(PRETRAIN_RUNS, dataset=region_dataset)),
    output:
        best=f"{OUTDIR}/train/region_pretrain/{{id}}/best.safetensors",
        last=f"{OUTDIR}/train/region_pretrain/{{id}}/last.safetensors",
        metrics=report(
            f"{OUTDIR}/train/region_pretrain/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/region_pretrain/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(PRETRAIN_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=train_options(PRETRAIN_RUNS, "region_pretrain"),
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train region-pretrain --train {input.train} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_expression:
    input:
        unpack(
            train_inputs(
                EXPRESSION_RUNS, dataset=region_dataset, init_command="region_pretrain"
            )
        ),
    output:
        best=f"{OUTDIR}/train/expression/{{id}}/best.safetensors",
        last=f"{OUTDIR}/train/expression/{{id}}/last.safetensors",
        metrics=report(
            f"{OUTDIR}/train/expression/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/expression/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(EXPRESSION_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=train_options(EXPRESSION_RUNS, "expression"),
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train expression --train {input.train} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_dual:
    input:
        unpack(train_inputs(DUAL_RUNS)),
    output:
        best=f"{OUTDIR}/train/dual/{{id}}/best.safetensors",
        last=f"{OUTDIR}/train/dual/{{id}}/last.safetensors",
        metrics=report(
            f"{OUTDIR}/train/dual/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/dual/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(DUAL_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=train_options(DUAL_RUNS, "dual"),
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train dual --train {input.train} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_tabular:
    input:
        unpack(tabular_inputs),
    output:
        best=f"{OUTDIR}/train/tabular/{{id}}/best.safetensors",
        metrics=report(
            f"{OUTDIR}/train/tabular/{{id}}/metrics.tsv",
            caption="../report/train_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
    log:
        f"{LOGDIR}/train/tabular/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(TABULAR_SPLIT),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=tabular_options,
        folder=lambda wildcards, output: os.path.dirname(output.best),
    shell:
        "luminome-train tabular --train {input.table} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_tabular_cv:
    input:
        unpack(tabular_inputs),
    output:
        metrics=report(
            f"{OUTDIR}/train/tabular/{{id}}/cv_metrics.tsv",
            caption="../report/cv_metrics.rst",
            category="Training",
            subcategory="{id}",
        ),
        predictions=f"{OUTDIR}/train/tabular/{{id}}/cv_predictions.tsv",
    log:
        f"{LOGDIR}/train/tabular/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(TABULAR_CV),
    conda:
        "../envs/luminome.yaml"
    threads: TRAIN["threads"]
    resources:
        mem_mb=TRAIN["mem_mb"],
        gpu=gpu_count(TRAIN),
    params:
        options=tabular_options,
        folder=lambda wildcards, output: os.path.dirname(output.metrics),
    shell:
        "luminome-train tabular --train {input.table} {params.options}"
        " --threads {threads} -o {params.folder} 2> {log}"


rule train_version:
    output:
        f"{OUTDIR}/versions/luminome-train.txt",
    log:
        f"{LOGDIR}/versions/luminome-train.log",
    conda:
        "../envs/luminome.yaml"
    threads: 1
    shell:
        "luminome-train --version > {output} 2> {log}"
