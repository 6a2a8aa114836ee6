process LUMINOME_TOKENIZESHARD {
    tag "$meta.id ${meta.shard}/${meta.shards}"
    label 'process_low'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // meta.shard of meta.shards (1-based) names the part of the units (blocks of 1,024 records
    // or windows, dealt round robin) this task tokenizes
    tuple val(meta), path(sequences)
    // Reference for BED/narrowPeak input, [[], [], []] otherwise; fai may be [] (indexed in memory)
    tuple val(meta2), path(fasta), path(fai)

    output:
    // the part's rows, joined by LUMINOME_TOKENIZEGATHER (--gather)
    tuple val(meta), path("${prefix}.part.safetensors"), emit: part
    tuple val("${task.process}"), val('luminome-tokenize'), eval("luminome-tokenize --version | sed 's/^luminome-tokenize //'"), topic: versions, emit: versions_luminome_tokenize

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}.${meta.shard}-of-${meta.shards}"
    def reference = fasta ? "--reference ${fasta}" : ''
    def shard = "${meta.shard}/${meta.shards}"
    """
    luminome-tokenize \\
        ${sequences} \\
        ${reference} \\
        ${args} \\
        --threads ${task.cpus} \\
        --shard ${shard} \\
        --output ${prefix}.part.safetensors
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}.${meta.shard}-of-${meta.shards}"
    """
    touch ${prefix}.part.safetensors
    """
}
