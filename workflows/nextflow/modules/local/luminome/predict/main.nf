process LUMINOME_PREDICT {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // dataset: a token dataset tokenized like the training data (classify models), a region
    // dataset (expression models) or a CSV/TSV table (tabular models); dataset_sidecars: the
    // files the tool reads from beside it (.index.tsv; .samples.tsv and .regions.tsv; [] for a table)
    tuple val(meta), path(dataset), path(dataset_sidecars)
    // checkpoint: from luminome-train classify, expression or tabular
    tuple val(meta2), path(checkpoint)

    output:
    tuple val(meta), path("${prefix}.predictions.tsv"), emit: predictions
    tuple val(meta), path("${prefix}.metrics.tsv")    , emit: metrics, optional: true
    tuple val("${task.process}"), val('luminome-predict'), eval("luminome-predict --version | sed 's/^luminome-predict //'"), topic: versions, emit: versions_luminome_predict

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    // metrics need labels: meta.labelled = false leaves them out
    def metrics = meta.labelled == false ? '' : "--metrics ${prefix}.metrics.tsv"
    def device = task.accelerator ? '--device cuda' : ''
    """
    luminome-predict \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
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
