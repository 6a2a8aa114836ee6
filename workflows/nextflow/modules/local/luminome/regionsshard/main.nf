process LUMINOME_REGIONSSHARD {
    tag "$meta.id ${meta.shard}/${meta.shards}"
    label 'process_medium'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // meta.shard of meta.shards (1-based) names the part: a share of the regions' scan chunks and
    // every meta.shards-th cell type's accessibility.
    // meta.accessibility / meta.expression: cell types, in the order of the files (each file is
    // staged in a folder of its own: two cell types may have tracks of the same name).
    // genes ([] with --tile-step in ext.args), peaks, expression, motifs, motif_clusters may be [].
    tuple val(meta), path(genes), path(peaks), path(accessibility, stageAs: 'acc/*/*'), path(expression, stageAs: 'expr/*/*'), path(motifs), path(motif_clusters)
    tuple val(meta2), path(fasta), path(fai)

    output:
    // the part's motif scores and raw accessibility, joined by LUMINOME_REGIONSGATHER (--gather)
    tuple val(meta), path("${prefix}.part.safetensors"), emit: part
    tuple val("${task.process}"), val('luminome-regions'), eval("luminome-regions --version | sed 's/^luminome-regions //'"), topic: versions, emit: versions_luminome_regions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}.${meta.shard}-of-${meta.shards}"
    def peak_options = (peaks instanceof List ? peaks : [peaks]).collect { "--peaks ${it}" }.join(' ')
    def acc_files = accessibility instanceof List ? accessibility : [accessibility]
    def acc_options = [meta.accessibility, acc_files].transpose().collect { cell, file -> "--accessibility ${cell}=${file}" }.join(' ')
    def expr_files = expression instanceof List ? expression : [expression]
    def expr_options = expression ? [meta.expression, expr_files].transpose().collect { cell, file -> "--expression ${cell}=${file}" }.join(' ') : ''
    def motif_options = motifs ? "--motifs ${motifs}" : ''
    def cluster_options = motif_clusters ? "--motif-clusters ${motif_clusters}" : ''
    def genes_option = genes ? "--genes ${genes}" : ''
    def shard = "${meta.shard}/${meta.shards}"
    """
    luminome-regions \\
        --reference ${fasta} \\
        ${genes_option} \\
        ${peak_options} \\
        ${acc_options} \\
        ${expr_options} \\
        ${motif_options} \\
        ${cluster_options} \\
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
