process LUMINOME_TRAIN {
    tag "$meta.id"
    label 'process_medium'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // train / dev: a dataset and the files the tool reads from beside it (sidecars: a token or
    // pair dataset's .index.tsv, a region dataset's .samples.tsv and .regions.tsv; [] for a
    // table); dev is [[], [], []] without a dev set. init: an MLM checkpoint (classify) or a
    // region-pretrain checkpoint (expression), [[], []] when not used.
    tuple val(meta), path(train), path(train_sidecars), path(dev), path(dev_sidecars)
    tuple val(meta2), path(init)
    val command   // 'mlm', 'classify' (token datasets), 'bistrand' (pair datasets), 'dual' (pairs datasets), 'region-pretrain' or 'expression' (region datasets), 'tabular' (a CSV/TSV table; no --folds: one model)

    output:
    tuple val(meta), path("${prefix}/best.safetensors"), emit: best
    tuple val(meta), path("${prefix}/last.safetensors"), emit: last
    tuple val(meta), path("${prefix}/metrics.tsv")     , emit: metrics
    tuple val("${task.process}"), val('luminome-train'), eval("luminome-train --version | sed 's/^luminome-train //'"), topic: versions, emit: versions_luminome_train

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def dev_option = dev ? "--dev ${dev}" : ''
    def init_option = init ? "--init ${init}" : ''
    def device = task.accelerator ? '--device cuda' : ''
    """
    luminome-train ${command} \\
        --train ${train} \\
        ${dev_option} \\
        ${init_option} \\
        ${args} \\
        ${device} \\
        --threads ${task.cpus} \\
        --output ${prefix}
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    mkdir -p ${prefix}
    touch ${prefix}/best.safetensors
    touch ${prefix}/last.safetensors
    touch ${prefix}/metrics.tsv
    """
}
