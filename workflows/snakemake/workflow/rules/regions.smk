# luminome-regions: region x motif / accessibility matrices per gene and cell type (or per
# window tiled along the reference, `tile_step`, for masked-region pretraining). Runs are
# config["regions"]["runs"] entries; outputs per run id: {outdir}/regions/{id}.safetensors,
# {id}.samples.tsv and {id}.regions.tsv. `reuse_regions: <run id>` reads that run's regions
# table instead of rescanning.
# With `shards: N` a run is N regions_shard jobs (each scans a share of the regions' chunks and
# counts every Nth cell type's accessibility) that the regions rule joins (--gather) into the
# bytes one job writes; a failed shard reruns alone.


rule regions_shard:
    input:
        unpack(regions_inputs),
    output:
        part=temp(
            f"{OUTDIR}/regions/{{id}}.parts/{{shard}}-of-{{shards}}.part.safetensors"
        ),
    log:
        f"{LOGDIR}/regions/{{id}}.{{shard}}-of-{{shards}}.log",
    wildcard_constraints:
        id=ids_pattern(REGIONS_RUNS),
        shard=r"[0-9]+",
        shards=r"[0-9]+",
    conda:
        "../envs/luminome.yaml"
    threads: REGIONS["threads"]
    resources:
        mem_mb=REGIONS["mem_mb"],
    params:
        options=regions_options,
    shell:
        "luminome-regions --reference {input.reference} {params.options}"
        " --threads {threads} --shard {wildcards.shard}/{wildcards.shards}"
        " -o {output.part} 2> {log}"


rule regions:
    input:
        unpack(regions_inputs),
        parts=shard_parts(REGIONS_RUNS, f"{OUTDIR}/regions"),
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
    threads: gathered_threads(REGIONS_RUNS, REGIONS)
    resources:
        mem_mb=REGIONS["mem_mb"],
    params:
        options=regions_options,
        gather=gather_parts,
    shell:
        "luminome-regions --reference {input.reference}"
        " {params.options} --samples-output {output.samples}"
        " --regions-output {output.regions} --threads {threads}"
        " -o {output.dataset} {params.gather} 2> {log}"


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
