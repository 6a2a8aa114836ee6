#!/usr/bin/env nextflow
/*
 * Luminome Nextflow pipeline (DSL2). One module per tool under modules/local/luminome/.
 *
 *   nextflow run workflows/nextflow -profile test,docker
 *   nextflow run workflows/nextflow -profile docker --input samplesheet.csv --outdir results
 *
 * The samplesheet is a CSV with the columns id,input,reference,args (reference and args
 * may be empty). Relative paths in it are relative to the samplesheet's own folder.
 */

include { LUMINOME_TOKENIZE } from './modules/local/luminome/tokenize/main'

// A samplesheet path, relative to the samplesheet's folder unless absolute or a URL.
def samplesheetFile(String value, baseDir) {
    def isRemoteOrAbsolute = value.startsWith('/') || value ==~ /^[A-Za-z][A-Za-z0-9+.-]*:\/\/.*/
    def location = isRemoteOrAbsolute ? value : baseDir.resolve(value).toString()
    return file(location, checkIfExists: true)
}

// One samplesheet row -> [ meta, sequences, fasta or [], fai or [] ].
def tokenizeDataset(Map row, baseDir, String samplesheet) {
    if (!row.id || !row.input) {
        error("${samplesheet}: every row needs an id and an input; got ${row}")
    }
    def meta = [id: row.id, args: row.args ?: '']
    def sequences = samplesheetFile(row.input, baseDir)
    def fasta = row.reference ? samplesheetFile(row.reference, baseDir) : []
    def fai = fasta ? fasta.resolveSibling("${fasta.name}.fai") : []
    return [meta, sequences, fasta, fai && fai.exists() ? fai : []]
}

workflow {
    main:
    if (!params.input) {
        error("Give a samplesheet with --input (CSV: id,input,reference,args), or use -profile test")
    }
    def samplesheet = file(params.input, checkIfExists: true)

    ch_datasets = channel.fromPath(params.input)
        .splitCsv(header: true, strip: true)
        .map { row -> tokenizeDataset(row, samplesheet.parent, params.input) }

    LUMINOME_TOKENIZE(ch_datasets)

    // Every module emits (process, tool, version) on the `versions` topic.
    channel.topic('versions')
        .unique()
        .map { process, tool, version -> "${process}\t${tool}\t${version}" }
        .collectFile(
            name: 'software_versions.tsv',
            storeDir: "${params.outdir}/pipeline_info",
            seed: "process\ttool\tversion",
            newLine: true,
            sort: true
        )
}
