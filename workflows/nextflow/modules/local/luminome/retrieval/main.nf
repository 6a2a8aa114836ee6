process LUMINOME_RETRIEVAL {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    container "${ task.ext.use_gpu ? 'luminome/luminome:0.1.0-cuda' : 'luminome/luminome:0.1.0' }"

    input:
    // checkpoint: from luminome-train dual; pairs: a luminome-tokenize --format pairs dataset
    // and its index; corpus / corpus_index: a token dataset of the passages to rank and its
    // index ([] to rank the pairs' own passages). Every file the tool reads is staged.
    tuple val(meta), path(checkpoint), path(pairs), path(pairs_index), path(corpus), path(corpus_index)

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
    def device = task.ext.use_gpu ? '--device cuda' : ''
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
