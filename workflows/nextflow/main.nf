#!/usr/bin/env nextflow
/*
 * Luminome Nextflow pipeline (DSL2). One module per tool under modules/local/luminome/.
 *
 *   nextflow run workflows/nextflow -profile test,docker
 *   nextflow run workflows/nextflow -profile docker --input samplesheet.csv --outdir results
 *
 * The samplesheet is a CSV with the columns id,input,reference,args (reference and args
 * may be empty). Relative paths in it are relative to the samplesheet's own folder; so are
 * those of the regions CSV (--regions_input) and the pairs CSV (--pairs_input).
 */

include { LUMINOME_TOKENIZE                              } from './modules/local/luminome/tokenize/main'
include { LUMINOME_REGIONS                               } from './modules/local/luminome/regions/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_MLM           } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_CLASSIFY      } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_BISTRAND      } from './modules/local/luminome/train/main'
include { LUMINOME_MASKPAIRS                             } from './modules/local/luminome/maskpairs/main'
include { LUMINOME_PREDICTVARIANTS                       } from './modules/local/luminome/predictvariants/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_PRETRAIN      } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_EXPRESSION    } from './modules/local/luminome/train/main'
include { LUMINOME_PREDICT as LUMINOME_PREDICT_EXPRESSION } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE as LUMINOME_IMPORTANCE_EXPRESSION } from './modules/local/luminome/importance/main'
include { LUMINOME_PREDICT                               } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE                            } from './modules/local/luminome/importance/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_TABULAR       } from './modules/local/luminome/train/main'
include { LUMINOME_PREDICT as LUMINOME_PREDICT_TABULAR   } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE as LUMINOME_IMPORTANCE_TABULAR } from './modules/local/luminome/importance/main'
include { LUMINOME_TOKENIZE as LUMINOME_TOKENIZE_PAIRS   } from './modules/local/luminome/tokenize/main'
include { LUMINOME_TOKENIZE as LUMINOME_TOKENIZE_CORPUS  } from './modules/local/luminome/tokenize/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_DUAL          } from './modules/local/luminome/train/main'
include { LUMINOME_RETRIEVAL                             } from './modules/local/luminome/retrieval/main'

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
    if (!row.id || !row.reference || !row.accessibility || !(row.genes || (row.args ?: '').contains('--tile-step'))) {
        error("${csv}: every row needs id, reference, accessibility and genes (or --tile-step in args); got ${row}")
    }
    def (accTypes, accFiles) = cellTypeFiles(row.accessibility, baseDir, csv, 'accessibility')
    def (exprTypes, exprFiles) = cellTypeFiles(row.expression, baseDir, csv, 'expression')
    def meta = [id: row.id, args: row.args ?: '', accessibility: accTypes, expression: exprTypes]
    def optional = { value -> value ? samplesheetFile(value, baseDir) : [] }
    def peaks = (row.peaks ?: '').split(';').findAll { it.trim() }.collect { samplesheetFile(it.trim(), baseDir) }
    return [meta, samplesheetFile(row.reference, baseDir), optional(row.genes), peaks,
            accFiles, exprFiles, optional(row.motifs), optional(row.motif_clusters)]
}

// One pairs CSV row -> [ meta, sequences, strand_b or [], variants or [], fai or [] ].
def pairsDataset(Map row, baseDir, String csv) {
    def types = ['fasta', 'fasta_pair', 'paired', 'variants']
    if (!row.id || !row.sequences || !(row.type in types)) {
        error("${csv}: every row needs an id, sequences and a type (${types.join(', ')}); got ${row}")
    }
    if ((row.type == 'fasta_pair') != (row.strand_b as boolean) || (row.type == 'variants') != (row.variants as boolean)) {
        error("${csv}: ${row.id}: strand_b goes with type fasta_pair and variants with type variants; got ${row}")
    }
    def meta = [id: row.id, type: row.type, args: row.args ?: '']
    def sequences = samplesheetFile(row.sequences, baseDir)
    def strandB = row.strand_b ? samplesheetFile(row.strand_b, baseDir) : []
    def variants = row.variants ? samplesheetFile(row.variants, baseDir) : []
    def fai = row.type == 'variants' ? sequences.resolveSibling("${sequences.name}.fai") : []
    return [meta, sequences, strandB, variants, fai && fai.exists() ? fai : []]
}

// [id, file] pairs of a channel -> the file of one id, or [[]] (no file) when id is empty.
def fileOf(ch, String id) {
    return id
        ? ch.filter { entryId, _file -> entryId == id }.map { _id, file -> file }
        : channel.value([[]])   // [[]]: combine spreads it to one empty 'none' element
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

        // Expression: --expression_dataset (a regions id, with expression) trains an expression
        // model, from the encoder pretrained on --pretrain_dataset (a regions id, e.g. tiles)
        // when given; the model then predicts and explains its held-out samples.
        if (params.expression_dataset) {
            ch_region_sets = LUMINOME_REGIONS.out.dataset
                .join(LUMINOME_REGIONS.out.samples)
                .join(LUMINOME_REGIONS.out.regions)
                .map { meta, dataset, samples, regions -> [meta.id, [dataset, samples, regions]] }
            ch_genes = fileOf(ch_region_sets, params.expression_dataset)
            ch_init_expression = channel.value([[]])
            if (params.pretrain_dataset) {
                LUMINOME_TRAIN_PRETRAIN(
                    fileOf(ch_region_sets, params.pretrain_dataset)
                        .map { dataset, samples, regions -> [[id: "${params.pretrain_dataset}_pretrain"], [dataset, samples, regions], [], []] },
                    'region-pretrain'
                )
                ch_init_expression = LUMINOME_TRAIN_PRETRAIN.out.best.map { _meta, best -> best }
            }
            LUMINOME_TRAIN_EXPRESSION(
                // combine concatenates list items: [dataset, samples, regions, init]
                ch_genes.combine(ch_init_expression)
                    .map { dataset, samples, regions, init -> [[id: "${params.expression_dataset}_expression"], [dataset, samples, regions], [], init] },
                'expression'
            )
            ch_expression = LUMINOME_TRAIN_EXPRESSION.out.best
                .map { _meta, best -> best }
                .combine(ch_genes)
                .map { model, dataset, samples, regions -> [[id: "${params.expression_dataset}_expression"], model, [dataset, samples, regions]] }
            LUMINOME_PREDICT_EXPRESSION(ch_expression)
            if (params.expression_importance_args) {
                LUMINOME_IMPORTANCE_EXPRESSION(ch_expression)
            }
        }
    }

    // Models: the samplesheet ids named by --train_dataset, --dev_dataset, --predict_dataset.
    if (params.train_dataset) {
        ch_tokens = LUMINOME_TOKENIZE.out.tokens.map { meta, tokens -> [meta.id, tokens] }
        ch_train_dev = fileOf(ch_tokens, params.train_dataset).combine(fileOf(ch_tokens, params.dev_dataset))

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

    // Bi-strand masked LM: a pairs CSV (--pairs_input) with id,type,sequences,strand_b,variants,args;
    // --bistrand_train / --bistrand_dev / --variants_dataset name its ids.
    if (params.pairs_input) {
        def pairsCsv = file(params.pairs_input, checkIfExists: true)
        ch_pairs_in = channel.fromPath(params.pairs_input)
            .splitCsv(header: true, strip: true)
            .map { row -> pairsDataset(row, pairsCsv.parent, params.pairs_input) }
        LUMINOME_MASKPAIRS(ch_pairs_in)

        if (params.bistrand_train) {
            ch_pairs = LUMINOME_MASKPAIRS.out.pairs.map { meta, pairs -> [meta.id, pairs] }
            LUMINOME_TRAIN_BISTRAND(
                fileOf(ch_pairs, params.bistrand_train)
                    .combine(fileOf(ch_pairs, params.bistrand_dev))
                    .map { train, dev -> [[id: "${params.bistrand_train}_bistrand"], train, dev, []] },
                'bistrand'
            )
            if (params.variants_dataset) {
                // The scored VCF copies the records of the variants file the dataset was built from.
                ch_variants = ch_pairs_in.map { meta, _sequences, _strand_b, variants, _fai -> [meta.id, variants] }
                ch_model = LUMINOME_TRAIN_BISTRAND.out.best.map { _meta, best -> best }
                ch_score = ch_pairs
                    .filter { id, _pairs -> id == params.variants_dataset }
                    .join(ch_variants)
                    .combine(ch_model)
                    .map { id, pairs, variants, model -> [[id: id], model, pairs, variants] }
                LUMINOME_PREDICTVARIANTS(ch_score)
            }
        }
    }

    // Tabular classifier: --tabular_table (a CSV/TSV feature table) with --tabular_args naming
    // at least its --label column; the model predicts and explains --tabular_predict_table.
    if (params.tabular_table) {
        def table = file(params.tabular_table, checkIfExists: true)
        def id = table.baseName.replaceAll(/\.(tsv|csv|txt|tab)$/, '')
        LUMINOME_TRAIN_TABULAR(channel.value([[id: "${id}_tabular"], table, [], []]), 'tabular')
        if (params.tabular_predict_table) {
            def predict_table = file(params.tabular_predict_table, checkIfExists: true)
            ch_tabular = LUMINOME_TRAIN_TABULAR.out.best
                .map { meta, best -> [[id: meta.id], best, predict_table] }
            LUMINOME_PREDICT_TABULAR(ch_tabular)
            if (params.tabular_importance_args) {
                LUMINOME_IMPORTANCE_TABULAR(ch_tabular)
            }
        }
    }

    // Dual encoder: pair tables tokenized with --format pairs, trained with luminome-train dual,
    // and the test queries ranked against the corpus FASTA (tokenized the same way).
    if (params.dual_train) {
        def pair_tables = [train: params.dual_train, dev: params.dual_dev, test: params.dual_test]
            .findAll { _split, path -> path }
            .collect { split, path -> [[id: "dual_${split}", split: split], file(path, checkIfExists: true), [], []] }
        LUMINOME_TOKENIZE_PAIRS(channel.fromList(pair_tables))
        // [split, dataset, index] per pairs dataset
        ch_pairs_ds = LUMINOME_TOKENIZE_PAIRS.out.tokens
            .join(LUMINOME_TOKENIZE_PAIRS.out.index)
            .map { meta, tokens, index -> [meta.split, tokens, index] }
        ch_train_pairs = ch_pairs_ds.filter { split, _t, _i -> split == 'train' }.map { _s, t, _i -> t }
        ch_dev_pairs = ch_pairs_ds.filter { split, _t, _i -> split == 'dev' }.map { _s, t, _i -> t }
        ch_dual_input = params.dual_dev
            ? ch_train_pairs.combine(ch_dev_pairs).map { train, dev -> [[id: 'dual'], train, dev, []] }
            : ch_train_pairs.map { train -> [[id: 'dual'], train, [], []] }
        LUMINOME_TRAIN_DUAL(ch_dual_input, 'dual')
        if (params.dual_test) {
            ch_test_pairs = ch_pairs_ds.filter { split, _t, _i -> split == 'test' }.map { _s, t, i -> [t, i] }
            if (params.dual_corpus) {
                LUMINOME_TOKENIZE_CORPUS(channel.value([[id: 'dual_corpus'], file(params.dual_corpus, checkIfExists: true), [], []]))
                ch_corpus = LUMINOME_TOKENIZE_CORPUS.out.tokens
                    .join(LUMINOME_TOKENIZE_CORPUS.out.index)
                    .map { _meta, tokens, index -> [tokens, index] }
            } else {
                ch_corpus = channel.value([[], []])
            }
            LUMINOME_RETRIEVAL(
                LUMINOME_TRAIN_DUAL.out.best
                    .combine(ch_test_pairs)
                    .combine(ch_corpus)
                    .map { _meta, best, pairs, pairs_index, corpus, corpus_index ->
                        [[id: 'dual_test'], best, pairs, pairs_index, corpus, corpus_index]
                    }
            )
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
