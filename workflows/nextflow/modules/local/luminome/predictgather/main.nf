process LUMINOME_PREDICTGATHER {
    tag "$meta.id"
    // A gather computes nothing: it reads the parts and writes the outputs of one run, on one
    // CPU (no process_gpu label, so -profile gpu gives it no GPU and the CPU image).
    label 'process_single'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // dataset: the dataset the parts were cut from, with its index; variants: for a
    // luminome-mask-pairs variants dataset, the VCF/BCF/table it was built from (its records are
    // copied into the scored VCF), [] for a classifier's token dataset
    tuple val(meta), path(dataset), path(dataset_index), path(variants)
    // checkpoint: the one the parts were scored with (luminome-train bistrand or classify)
    tuple val(meta2), path(checkpoint)
    // parts: every LUMINOME_PREDICTSHARD part of this dataset
    path(parts, stageAs: 'parts/*')

    output:
    // a classifier's token dataset: what LUMINOME_PREDICT writes
    tuple val(meta), path("${prefix}.predictions.tsv"), emit: predictions, optional: true
    tuple val(meta), path("${prefix}.metrics.tsv")    , emit: metrics, optional: true
    // a variants dataset: what LUMINOME_PREDICTVARIANTS writes
    tuple val(meta), path("${prefix}.scores.tsv")     , emit: scores, optional: true
    tuple val(meta), path("${prefix}.scores.vcf.gz")  , emit: vcf, optional: true
    tuple val(meta), path("${prefix}.scores.vcf.gz.tbi"), emit: tbi, optional: true
    tuple val(meta), path("${prefix}.llr.bedgraph")   , emit: bedgraph, optional: true
    tuple val("${task.process}"), val('luminome-predict'), eval("luminome-predict --version | sed 's/^luminome-predict //'"), topic: versions, emit: versions_luminome_predict

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    // The options in the one-task modules' order, so that the command a scored VCF records
    // (the gather's, without --gather) is the one-task command's.
    def variant_input = variants ? "--variants ${variants}" : ''
    def variant_outputs = variants ? "--vcf ${prefix}.scores.vcf.gz --bedgraph ${prefix}.llr.bedgraph" : ''
    // metrics need labels: meta.labelled = false leaves them out; a variants dataset has none
    def metrics = (!variants && meta.labelled != false) ? "--metrics ${prefix}.metrics.tsv" : ''
    def output = variants ? "${prefix}.scores.tsv" : "${prefix}.predictions.tsv"
    """
    luminome-predict \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
        ${variant_input} \\
        --gather ${parts} \\
        ${variant_outputs} \\
        ${metrics} \\
        ${args} \\
        --threads ${task.cpus} \\
        --output ${output}
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    if (variants) {
        """
        touch ${prefix}.scores.tsv
        echo | gzip > ${prefix}.scores.vcf.gz
        touch ${prefix}.scores.vcf.gz.tbi
        touch ${prefix}.llr.bedgraph
        """
    } else {
        """
        touch ${prefix}.predictions.tsv
        touch ${prefix}.metrics.tsv
        """
    }
}
