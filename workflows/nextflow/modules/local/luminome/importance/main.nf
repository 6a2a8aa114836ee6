process LUMINOME_IMPORTANCE {
    tag "$meta.id"
    label 'process_low'
    label 'process_gpu'

    conda "${moduleDir}/environment.yml"
    // task.accelerator (set by -profile gpu for the process_gpu label) picks the CUDA image.
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        (task.accelerator ? 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0-cuda.sif' : 'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif') :
        (task.accelerator ? 'ghcr.io/luminome/luminome:0.1.0-cuda' : 'ghcr.io/luminome/luminome:0.1.0') }"

    input:
    // As LUMINOME_PREDICT: a dataset (token or region dataset, or a CSV/TSV table) with the
    // files the tool reads from beside it, and the model's checkpoint.
    tuple val(meta), path(dataset), path(dataset_sidecars)
    tuple val(meta2), path(checkpoint)

    output:
    tuple val(meta), path("${prefix}.tsv")        , emit: scores
    tuple val(meta), path("${prefix}.npz")        , emit: npz, optional: true
    tuple val(meta), path("${prefix}.ranking.tsv"), emit: ranking, optional: true
    tuple val("${task.process}"), val('luminome-importance'), eval("luminome-importance --version | sed 's/^luminome-importance //'"), topic: versions, emit: versions_luminome_importance

    when:
    task.ext.when == null || task.ext.when

    script:
    // ext.args must include --method gates|saliency|ig (expression models: pooling|saliency|ig;
    // tabular models: saliency|ig|attention)
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? '--device cuda' : ''
    // Datasets give an npz of per-base (or per-region) contributions; tables a global column ranking.
    def extra_output = dataset.name.endsWith('.safetensors') ? "--npz ${prefix}.npz" : "--ranking ${prefix}.ranking.tsv"
    """
    luminome-importance \\
        --checkpoint ${checkpoint} \\
        --dataset ${dataset} \\
        ${args} \\
        ${device} \\
        ${extra_output} \\
        --threads ${task.cpus} \\
        --output ${prefix}.tsv
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    def extra_output = dataset.name.endsWith('.safetensors') ? "${prefix}.npz" : "${prefix}.ranking.tsv"
    """
    touch ${prefix}.tsv
    touch ${extra_output}
    """
}
