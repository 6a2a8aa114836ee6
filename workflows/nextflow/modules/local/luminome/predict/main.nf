process LUMINOME_PREDICT {
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
    tuple val(meta), path("${prefix}.predictions.tsv"), emit: predictions
    tuple val(meta), path("${prefix}.metrics.tsv")    , emit: metrics, optional: true
    tuple val("${task.process}"), val('luminome-predict'), eval("luminome-predict --version | sed 's/^luminome-predict //'"), topic: versions, emit: versions_luminome_predict

    when:
    task.ext.when == null || task.ext.when

    script:
    // A region dataset comes with its samples and regions tables (read from beside it): the
    // input may be that list of files; the dataset is its .safetensors (or a table's file).
    def dataset_file = { files -> def all = files instanceof List ? files : [files]; all.find { it.name.endsWith('.safetensors') } ?: all[0] }
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    // metrics need labels: meta.labelled = false leaves them out
    def metrics = meta.labelled == false ? '' : "--metrics ${prefix}.metrics.tsv"
    def device = task.ext.use_gpu ? '--device cuda' : ''
    """
    luminome-predict \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset_file(dataset)} \\
        ${metrics} \\
        ${args} \\
        ${device} \\
        --threads ${task.cpus} \\
        --output ${prefix}.predictions.tsv
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.predictions.tsv
    touch ${prefix}.metrics.tsv
    """
}
