process LUMINOME_IMPORTANCESHARD {
    tag "$meta.id ${meta.shard}/${meta.shards}"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // dataset: a token dataset and its index, a region dataset and its tables (expression
    // models) or a table and [] (tabular models); meta.shard of meta.shards (1-based) names
    // the part of the selected records (whole passes) this task explains
    tuple val(meta), path(dataset), path(dataset_index)
    // checkpoint: from luminome-train classify, expression or tabular
    tuple val(meta2), path(checkpoint)

    output:
    // the part's TSV lines, npz rows and track scores, joined by LUMINOME_IMPORTANCEGATHER
    tuple val(meta), path("${prefix}.part.safetensors"), emit: part
    tuple val("${task.process}"), val('luminome-importance'), eval("luminome-importance --version | sed 's/^luminome-importance //'"), topic: versions, emit: versions_luminome_importance

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}.${meta.shard}-of-${meta.shards}"
    def shard = "${meta.shard}/${meta.shards}"
    def device = task.accelerator ? '--device cuda' : ''
    // --npz says a sequence classifier's part keeps the npz rows (the gather writes the npz;
    // nothing is written there); an expression or tabular part keeps every sample's values
    def keeps = dataset.name.endsWith('.safetensors') ? "--npz ${prefix}.npz" : ''
    """
    luminome-importance \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
        ${args} \\
        ${device} \\
        ${keeps} \\
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
