process LUMINOME_TRAIN {
    tag "$meta.id"
    label 'process_medium'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    container "${ task.ext.use_gpu ? 'luminome/luminome:0.1.0-cuda' : 'luminome/luminome:0.1.0' }"

    input:
    // dev / init: [] when not used; init is an MLM checkpoint (classify only)
    tuple val(meta), path(train), path(dev), path(init)
    val command   // 'mlm', 'classify' (token datasets) or 'bistrand' (pair datasets)

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
    def device = task.ext.use_gpu ? '--device cuda' : ''
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
