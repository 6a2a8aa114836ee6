process LUMINOME_PREDICTVARIANTS {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // dataset: a luminome-mask-pairs variants dataset and its index; variants: the VCF/BCF/table
    // it was built from (its records are copied into the scored VCF)
    tuple val(meta), path(dataset), path(dataset_index), path(variants)
    // checkpoint: from luminome-train bistrand
    tuple val(meta2), path(checkpoint)

    output:
    tuple val(meta), path("${prefix}.scores.tsv")    , emit: scores
    tuple val(meta), path("${prefix}.scores.vcf.gz") , emit: vcf
    // absent when the variants file was not sorted (the VCF keeps its order)
    tuple val(meta), path("${prefix}.scores.vcf.gz.tbi"), emit: tbi, optional: true
    tuple val(meta), path("${prefix}.llr.bedgraph")  , emit: bedgraph
    tuple val("${task.process}"), val('luminome-predict'), eval("luminome-predict --version | sed 's/^luminome-predict //'"), topic: versions, emit: versions_luminome_predict

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? '--device cuda' : ''
    """
    luminome-predict \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
        --variants ${variants} \\
        --vcf ${prefix}.scores.vcf.gz \\
        --bedgraph ${prefix}.llr.bedgraph \\
        ${args} \\
        ${device} \\
        --threads ${task.cpus} \\
        --output ${prefix}.scores.tsv
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.scores.tsv
    echo | gzip > ${prefix}.scores.vcf.gz
    touch ${prefix}.scores.vcf.gz.tbi
    touch ${prefix}.llr.bedgraph
    """
}
