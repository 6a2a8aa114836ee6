# luminome-regions: region x motif / accessibility matrices per gene and cell type (or per
# window tiled along the reference, `tile_step`, for masked-region pretraining). Runs are
# config["regions"]["runs"] entries; outputs per run id: {outdir}/regions/{id}.safetensors,
# {id}.samples.tsv and {id}.regions.tsv. `reuse_regions: <run id>` reads that run's regions
# table instead of rescanning.


rule regions:
    input:
        unpack(regions_inputs),
    output:
        dataset=f"{OUTDIR}/regions/{{id}}.safetensors",
        samples=f"{OUTDIR}/regions/{{id}}.samples.tsv",
        regions=f"{OUTDIR}/regions/{{id}}.regions.tsv",
    log:
        f"{LOGDIR}/regions/{{id}}.log",
    wildcard_constraints:
        id=ids_pattern(REGIONS_RUNS),
    conda:
        "../envs/luminome.yaml"
    threads: REGIONS["threads"]
    resources:
        mem_mb=REGIONS["mem_mb"],
    params:
        options=regions_options,
    shell:
        "luminome-regions --reference {input.reference}"
        " {params.options} --samples-output {output.samples}"
        " --regions-output {output.regions} --threads {threads}"
        " -o {output.dataset} 2> {log}"


rule regions_version:
    output:
        f"{OUTDIR}/versions/luminome-regions.txt",
    log:
        f"{LOGDIR}/versions/luminome-regions.log",
    conda:
        "../envs/luminome.yaml"
    threads: 1
    shell:
        "luminome-regions --version > {output} 2> {log}"
