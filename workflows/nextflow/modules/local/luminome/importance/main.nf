process LUMINOME_IMPORTANCE {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    container "${ task.ext.use_gpu ? 'luminome/luminome:0.1.0-cuda' : 'luminome/luminome:0.1.0' }"

    input:
    // checkpoint: from luminome-train classify (dataset: a token dataset tokenized like the
    // training data), expression (dataset: a region dataset with its tables) or tabular
    // (dataset: a CSV/TSV table)
    tuple val(meta), path(checkpoint), path(dataset)

    output:
    tuple val(meta), path("${prefix}.tsv")        , emit: scores
    tuple val(meta), path("${prefix}.npz")        , emit: npz, optional: true
    tuple val(meta), path("${prefix}.ranking.tsv"), emit: ranking, optional: true
    tuple val("${task.process}"), val('luminome-importance'), eval("luminome-importance --version | sed 's/^luminome-importance //'"), topic: versions, emit: versions_luminome_importance

    when:
    task.ext.when == null || task.ext.when

    script:
    // ext.args must include --method gates|saliency|ig (expression models: pooling|saliency|ig;
    // tabular models: saliency|ig|attention)
    // A region dataset comes with its samples and regions tables (read from beside it): the
    // input may be that list of files; the dataset is its .safetensors (or a table's file).
    def files = dataset instanceof List ? dataset : [dataset]
    def data = files.find { it.name.endsWith('.safetensors') } ?: files[0]
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.ext.use_gpu ? '--device cuda' : ''
    // Tables give a global column ranking; datasets an npz of per-base contributions.
    def extra_output = data.name.endsWith('.safetensors') ? "--npz ${prefix}.npz" : "--ranking ${prefix}.ranking.tsv"
    """
    luminome-importance \\
        --checkpoint ${checkpoint} \\
        --dataset ${data} \\
        ${args} \\
        ${device} \\
        ${extra_output} \\
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
