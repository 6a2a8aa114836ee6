process LUMINOME_TRAIN {
    tag "$meta.id"
    label 'process_medium'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    container "${ task.ext.use_gpu ? 'luminome/luminome:0.1.0-cuda' : 'luminome/luminome:0.1.0' }"

    input:
    // dev / init: [] when not used; init is an MLM checkpoint (classify) or a region-pretrain
    // checkpoint (expression); train / dev may be a list: a region dataset with its tables
    tuple val(meta), path(train), path(dev), path(init)
    val command   // 'mlm', 'classify' (token datasets), 'bistrand' (pair datasets), 'region-pretrain' or 'expression' (region datasets), 'tabular' (a CSV/TSV table; no --folds: one model)

    output:
    tuple val(meta), path("${prefix}/best.safetensors"), emit: best
    tuple val(meta), path("${prefix}/last.safetensors"), emit: last
    tuple val(meta), path("${prefix}/metrics.tsv")     , emit: metrics
    tuple val("${task.process}"), val('luminome-train'), eval("luminome-train --version | sed 's/^luminome-train //'"), topic: versions, emit: versions_luminome_train

    when:
    task.ext.when == null || task.ext.when

    script:
    // A region dataset comes with its samples and regions tables (read from beside it): the
    // input may be that list of files; the dataset is its .safetensors (or a table's file).
    def dataset_file = { files -> def all = files instanceof List ? files : [files]; all.find { it.name.endsWith('.safetensors') } ?: all[0] }
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def dev_option = dev ? "--dev ${dataset_file(dev)}" : ''
    def init_option = init ? "--init ${init}" : ''
    def device = task.ext.use_gpu ? '--device cuda' : ''
    """
    luminome-train ${command} \\
        --train ${dataset_file(train)} \\
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
