process LUMINOME_REGIONSGATHER {
    tag "$meta.id"
    // A gather scans and counts nothing: it reads the parts, the genes and the expression and
    // writes the dataset of one task, on one CPU.
    label 'process_single'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // meta.accessibility / meta.expression: cell types, in the order of the files (each file is
    // staged in a folder of its own: two cell types may have tracks of the same name).
    // genes ([] with --tile-step in ext.args), peaks, expression, motifs, motif_clusters may be [].
    tuple val(meta), path(genes), path(peaks), path(accessibility, stageAs: 'acc/*/*'), path(expression, stageAs: 'expr/*/*'), path(motifs), path(motif_clusters)
    tuple val(meta2), path(fasta), path(fai)
    // parts: every LUMINOME_REGIONSSHARD part of this run
    path(parts, stageAs: 'parts/*')

    output:
    // what LUMINOME_REGIONS writes for one task
    tuple val(meta), path("${prefix}.safetensors"), emit: dataset
    tuple val(meta), path("${prefix}.samples.tsv"), emit: samples
    tuple val(meta), path("${prefix}.regions.tsv"), emit: regions
    tuple val("${task.process}"), val('luminome-regions'), eval("luminome-regions --version | sed 's/^luminome-regions //'"), topic: versions, emit: versions_luminome_regions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def peak_options = (peaks instanceof List ? peaks : [peaks]).collect { "--peaks ${it}" }.join(' ')
    def acc_files = accessibility instanceof List ? accessibility : [accessibility]
    def acc_options = [meta.accessibility, acc_files].transpose().collect { cell, file -> "--accessibility ${cell}=${file}" }.join(' ')
    def expr_files = expression instanceof List ? expression : [expression]
    def expr_options = expression ? [meta.expression, expr_files].transpose().collect { cell, file -> "--expression ${cell}=${file}" }.join(' ') : ''
    def motif_options = motifs ? "--motifs ${motifs}" : ''
    def cluster_options = motif_clusters ? "--motif-clusters ${motif_clusters}" : ''
    def genes_option = genes ? "--genes ${genes}" : ''
    // The options in LUMINOME_REGIONS's order, so that the command the dataset records (the
    // gather's, without --gather) is the one-task command's.
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
        --output ${prefix}.safetensors \\
        --gather ${parts}
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.safetensors
    touch ${prefix}.samples.tsv
    touch ${prefix}.regions.tsv
    """
}
