process LUMINOME_TOKENIZEGATHER {
    tag "$meta.id"
    // A gather tokenizes nothing: it reads the parts (and checks the inputs are the parts'
    // inputs) and writes the dataset of one task, on one CPU.
    label 'process_single'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // sequences and reference: the inputs the parts were tokenized from
    tuple val(meta), path(sequences)
    tuple val(meta2), path(fasta), path(fai)
    // parts: every LUMINOME_TOKENIZESHARD part of this dataset
    path(parts, stageAs: 'parts/*')

    output:
    // what LUMINOME_TOKENIZE writes for one task
    tuple val(meta), path("${prefix}.safetensors"), emit: tokens
    tuple val(meta), path("${prefix}.index.tsv")  , emit: index
    tuple val("${task.process}"), val('luminome-tokenize'), eval("luminome-tokenize --version | sed 's/^luminome-tokenize //'"), topic: versions, emit: versions_luminome_tokenize

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def reference = fasta ? "--reference ${fasta}" : ''
    // The options in LUMINOME_TOKENIZE's order, so that the command the dataset records (the
    // gather's, without --gather) is the one-task command's.
    """
    luminome-tokenize \\
        ${sequences} \\
        ${reference} \\
        --gather ${parts} \\
        ${args} \\
        --threads ${task.cpus} \\
        --output ${prefix}.safetensors
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.safetensors
    touch ${prefix}.index.tsv
    """
}
