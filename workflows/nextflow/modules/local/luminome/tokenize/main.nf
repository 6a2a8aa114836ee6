process LUMINOME_TOKENIZE {
    tag "$meta.id"
    label 'process_low'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    tuple val(meta), path(sequences)
    // Reference for BED/narrowPeak input, [[], [], []] otherwise; fai may be [] (indexed in memory)
    tuple val(meta2), path(fasta), path(fai)

    output:
    tuple val(meta), path("${prefix}.safetensors"), emit: tokens
    tuple val(meta), path("${prefix}.index.tsv")  , emit: index
    tuple val("${task.process}"), val('luminome-tokenize'), eval("luminome-tokenize --version | sed 's/^luminome-tokenize //'"), topic: versions, emit: versions_luminome_tokenize

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def reference = fasta ? "--reference ${fasta}" : ''
    """
    luminome-tokenize \\
        ${sequences} \\
        ${reference} \\
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
