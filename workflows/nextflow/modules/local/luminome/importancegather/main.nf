process LUMINOME_IMPORTANCEGATHER {
    tag "$meta.id"
    // A gather computes nothing: it reads the parts and writes the outputs of one run, on one
    // CPU (no process_gpu label, so -profile gpu gives it no GPU and the CPU image).
    label 'process_single'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // dataset: the dataset the parts explained, with its index or tables ([] for a table)
    tuple val(meta), path(dataset), path(dataset_index)
    // checkpoint: the model the parts explained
    tuple val(meta2), path(checkpoint)
    // parts: every LUMINOME_IMPORTANCESHARD part of this run
    path(parts, stageAs: 'parts/*')

    output:
    // what LUMINOME_IMPORTANCE writes
    tuple val(meta), path("${prefix}.tsv")        , emit: scores
    tuple val(meta), path("${prefix}.npz")        , emit: npz, optional: true
    tuple val(meta), path("${prefix}.ranking.tsv"), emit: ranking, optional: true
    tuple val("${task.process}"), val('luminome-importance'), eval("luminome-importance --version | sed 's/^luminome-importance //'"), topic: versions, emit: versions_luminome_importance

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    // Datasets give an npz, tables a global column ranking (as LUMINOME_IMPORTANCE)
    def extra_output = dataset.name.endsWith('.safetensors') ? "--npz ${prefix}.npz" : "--ranking ${prefix}.ranking.tsv"
    """
    luminome-importance \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
        ${args} \\
        ${extra_output} \\
        --threads ${task.cpus} \\
        --gather ${parts} \\
        --output ${prefix}.tsv
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    def extra_output = dataset.name.endsWith('.safetensors') ? "${prefix}.npz" : "${prefix}.ranking.tsv"
    """
    touch ${prefix}.tsv
    touch ${extra_output}
    """
}
