process LUMINOME_IMPORTANCE {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    container "${ task.ext.use_gpu ? 'luminome/luminome:0.1.0-cuda' : 'luminome/luminome:0.1.0' }"

    input:
    // checkpoint: from luminome-train classify (dataset: a token dataset tokenized like the
    // training data) or expression (dataset: a region dataset with its tables)
    tuple val(meta), path(checkpoint), path(dataset)

    output:
    tuple val(meta), path("${prefix}.tsv"), emit: scores
    tuple val(meta), path("${prefix}.npz"), emit: npz
    tuple val("${task.process}"), val('luminome-importance'), eval("luminome-importance --version | sed 's/^luminome-importance //'"), topic: versions, emit: versions_luminome_importance

    when:
    task.ext.when == null || task.ext.when

    script:
    // ext.args must include --method gates|saliency|ig (expression models: pooling|saliency|ig)
    // A region dataset comes with its samples and regions tables (read from beside it): the
    // input may be that list of files; the dataset is its .safetensors.
    def dataset_file = { files -> (files instanceof List ? files : [files]).find { it.name.endsWith('.safetensors') } }
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.ext.use_gpu ? '--device cuda' : ''
    """
    luminome-importance \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset_file(dataset)} \\
        ${args} \\
        ${device} \\
        --npz ${prefix}.npz \\
        --threads ${task.cpus} \\
        --output ${prefix}.tsv
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.tsv
    touch ${prefix}.npz
    """
}
