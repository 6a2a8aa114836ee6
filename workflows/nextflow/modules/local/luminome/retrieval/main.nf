process LUMINOME_RETRIEVAL {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // pairs: a luminome-tokenize --format pairs dataset and its index
    tuple val(meta), path(pairs), path(pairs_index)
    // corpus: a token dataset of the passages to rank and its index ([[], [], []] ranks the
    // pairs' own passages)
    tuple val(meta2), path(corpus), path(corpus_index)
    // checkpoint: from luminome-train dual
    tuple val(meta3), path(checkpoint)

    output:
    tuple val(meta), path("${prefix}.ranks.tsv")              , emit: ranks
    tuple val(meta), path("${prefix}.metrics.tsv")            , emit: metrics
    tuple val(meta), path("${prefix}.embeddings.safetensors") , emit: embeddings
    tuple val(meta), path("${prefix}.embeddings.index.tsv")   , emit: embeddings_index
    tuple val("${task.process}"), val('luminome-predict'), eval("luminome-predict --version | sed 's/^luminome-predict //'"), topic: versions, emit: versions_luminome_predict

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def corpus_option = corpus ? "--corpus ${corpus}" : ''
    def device = task.accelerator ? '--device cuda' : ''
    """
    luminome-predict \\
        --checkpoint ${checkpoint} \\
        --dataset ${pairs} \\
        ${corpus_option} \\
        --metrics ${prefix}.metrics.tsv \\
        --embeddings ${prefix}.embeddings.safetensors \\
        ${args} \\
        ${device} \\
        --threads ${task.cpus} \\
        --output ${prefix}.ranks.tsv
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.ranks.tsv
    touch ${prefix}.metrics.tsv
    touch ${prefix}.embeddings.safetensors
    touch ${prefix}.embeddings.index.tsv
    """
}
