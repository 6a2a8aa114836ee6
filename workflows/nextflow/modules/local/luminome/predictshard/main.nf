process LUMINOME_PREDICTSHARD {
    tag "$meta.id ${meta.shard}/${meta.shards}"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // dataset: a luminome-mask-pairs variants dataset (bi-strand models) or a token dataset
    // (classifiers) and its index; meta.shard of meta.shards (1-based) names the part of its
    // records this task scores
    tuple val(meta), path(dataset), path(dataset_index)
    // checkpoint: from luminome-train bistrand or classify
    tuple val(meta2), path(checkpoint)

    output:
    // the part's rows and exact scores, joined by LUMINOME_PREDICTGATHER (--gather)
    tuple val(meta), path("${prefix}.part.safetensors"), emit: part
    tuple val("${task.process}"), val('luminome-predict'), eval("luminome-predict --version | sed 's/^luminome-predict //'"), topic: versions, emit: versions_luminome_predict

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}.${meta.shard}-of-${meta.shards}"
    def shard = "${meta.shard}/${meta.shards}"
    def device = task.accelerator ? '--device cuda' : ''
    """
    luminome-predict \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
        ${args} \\
        ${device} \\
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
