process LUMINOME_MASKPAIRS {
    tag "$meta.id"
    label 'process_low'

    conda "${moduleDir}/environment.yml"
    container "${ workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container ?
        'https://github.com/luminome/luminome/releases/download/v0.1.0/luminome_0.1.0.sif' :
        'ghcr.io/luminome/luminome:0.1.0' }"

    input:
    // meta.type picks the input mode:
    //   fasta      sequences in windows, strand B their complement
    //   fasta_pair sequences = strand A, strand_b = strand B (records pair up in order)
    //   paired     sequences holds consecutive NAME/1 NAME/2 records
    //   variants   variants = VCF/BCF/table, windows cut from the reference (fasta, fai)
    // Inputs a mode does not use are [].
    tuple val(meta), path(sequences), path(strand_b), path(variants)
    tuple val(meta2), path(fasta), path(fai)

    output:
    tuple val(meta), path("${prefix}.safetensors"), emit: pairs
    tuple val(meta), path("${prefix}.index.tsv")  , emit: index
    tuple val("${task.process}"), val('luminome-mask-pairs'), eval("luminome-mask-pairs --version | sed 's/^luminome-mask-pairs //'"), topic: versions, emit: versions_luminome_mask_pairs

    when:
    task.ext.when == null || task.ext.when

    script:
    def args = task.ext.args ?: ''
    prefix = task.ext.prefix ?: "${meta.id}"
    def inputs = [
        fasta     : "--fasta ${sequences}",
        fasta_pair: "--fasta-a ${sequences} --fasta-b ${strand_b}",
        paired    : "--paired ${sequences}",
        variants  : "--reference ${fasta} --variants ${variants}",
    ][meta.type ?: 'fasta']
    if (!inputs) {
        error("LUMINOME_MASKPAIRS ${meta.id}: type must be fasta, fasta_pair, paired or variants, not '${meta.type}'")
    }
    """
    luminome-mask-pairs \\
        ${inputs} \\
        ${args} \\
        --threads ${task.cpus} \\
        --output ${prefix}.safetensors
    """

    stub:
    prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.safetensors
    touch ${prefix}.index.tsv
    """
}
