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

include { LUMINOME_TOKENIZE                              } from './modules/local/luminome/tokenize/main'
include { LUMINOME_REGIONS                               } from './modules/local/luminome/regions/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_MLM           } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_CLASSIFY      } from './modules/local/luminome/train/main'
include { LUMINOME_PREDICT                               } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE                            } from './modules/local/luminome/importance/main'

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

// "K562=a.bw;GM12878=b.bw" -> [ [cell types], [files] ] (paths relative to the CSV's folder).
def cellTypeFiles(String value, baseDir, String csv, String column) {
    def pairs = (value ?: '').split(';').findAll { it.trim() }.collect { entry ->
        def parts = entry.split('=', 2)
        if (parts.size() != 2) {
            error("${csv}: column ${column}: expected CELLTYPE=PATH, got '${entry}'")
        }
        [parts[0].trim(), samplesheetFile(parts[1].trim(), baseDir)]
    }
    return [pairs.collect { it[0] }, pairs.collect { it[1] }]
}

// One regions CSV row -> LUMINOME_REGIONS input tuple.
def regionsRun(Map row, baseDir, String csv) {
    if (!row.id || !row.reference || !row.genes || !row.accessibility) {
        error("${csv}: every row needs id, reference, genes and accessibility; got ${row}")
    }
    def (accTypes, accFiles) = cellTypeFiles(row.accessibility, baseDir, csv, 'accessibility')
    def (exprTypes, exprFiles) = cellTypeFiles(row.expression, baseDir, csv, 'expression')
    def meta = [id: row.id, args: row.args ?: '', accessibility: accTypes, expression: exprTypes]
    def optional = { value -> value ? samplesheetFile(value, baseDir) : [] }
    def peaks = (row.peaks ?: '').split(';').findAll { it.trim() }.collect { samplesheetFile(it.trim(), baseDir) }
    return [meta, samplesheetFile(row.reference, baseDir), samplesheetFile(row.genes, baseDir), peaks,
            accFiles, exprFiles, optional(row.motifs), optional(row.motif_clusters)]
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

    // Regions: a CSV (--regions_input) with id,reference,genes,peaks,accessibility,expression,motifs,motif_clusters,args
    if (params.regions_input) {
        def regionsCsv = file(params.regions_input, checkIfExists: true)
        ch_regions = channel.fromPath(params.regions_input)
            .splitCsv(header: true, strip: true)
            .map { row -> regionsRun(row, regionsCsv.parent, params.regions_input) }
        LUMINOME_REGIONS(ch_regions)
    }

    // Models: the samplesheet ids named by --train_dataset, --dev_dataset, --predict_dataset.
    if (params.train_dataset) {
        ch_tokens = LUMINOME_TOKENIZE.out.tokens.map { meta, tokens -> [meta.id, tokens] }
        ch_train = ch_tokens.filter { id, _tokens -> id == params.train_dataset }.map { _id, tokens -> tokens }
        ch_dev = params.dev_dataset
            ? ch_tokens.filter { id, _tokens -> id == params.dev_dataset }.map { _id, tokens -> tokens }
            : channel.value([[]])   // [[]]: combine spreads it to one empty 'no dev set' element
        ch_train_dev = ch_train.combine(ch_dev)

        ch_init = channel.value([[]])
        if (params.mlm) {
            LUMINOME_TRAIN_MLM(
                ch_train_dev.map { train, dev -> [[id: "${params.train_dataset}_mlm"], train, dev, []] },
                'mlm'
            )
            ch_init = LUMINOME_TRAIN_MLM.out.best.map { _meta, best -> best }
        }
        LUMINOME_TRAIN_CLASSIFY(
            ch_train_dev.combine(ch_init).map { train, dev, init -> [[id: "${params.train_dataset}_classify"], train, dev, init] },
            'classify'
        )

        if (params.predict_dataset) {
            ch_model = LUMINOME_TRAIN_CLASSIFY.out.best.map { _meta, best -> best }
            ch_predict = ch_tokens
                .filter { id, _tokens -> id == params.predict_dataset }
                .combine(ch_model)
                .map { id, tokens, model -> [[id: id], model, tokens] }
            LUMINOME_PREDICT(ch_predict)
            if (params.importance_args) {
                LUMINOME_IMPORTANCE(ch_predict)
            }
        }
    }

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
