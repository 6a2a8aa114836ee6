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
 *
 * nf-schema checks the parameters against nextflow_schema.json and reads the three CSVs with
 * samplesheetToList() against assets/schema_input.json, schema_regions.json, schema_pairs.json
 * (columns, file extensions, unique ids, which columns go together). A row comes back as
 * [ meta, <the schema's other columns in the schema's order> ], meta holding the columns the
 * schema marks "meta" (id, args; type for pairs), an empty column as []. Paths stay strings in
 * the schemas (nf-schema would resolve a file-path from the launch folder): samplesheetFile()
 * resolves them from the CSV's folder. check_schema.py checks that each .map below names the
 * schema's columns in that order.
 */

include { validateParameters; samplesheetToList           } from 'plugin/nf-schema'

include { LUMINOME_TOKENIZE                              } from './modules/local/luminome/tokenize/main'
include { LUMINOME_TOKENIZESHARD                         } from './modules/local/luminome/tokenizeshard/main'
include { LUMINOME_TOKENIZEGATHER                        } from './modules/local/luminome/tokenizegather/main'
include { LUMINOME_REGIONS                               } from './modules/local/luminome/regions/main'
include { LUMINOME_REGIONSSHARD                          } from './modules/local/luminome/regionsshard/main'
include { LUMINOME_REGIONSGATHER                         } from './modules/local/luminome/regionsgather/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_MLM           } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_CLASSIFY      } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_BISTRAND      } from './modules/local/luminome/train/main'
include { LUMINOME_MASKPAIRS                             } from './modules/local/luminome/maskpairs/main'
include { LUMINOME_PREDICTVARIANTS                       } from './modules/local/luminome/predictvariants/main'
include { LUMINOME_PREDICTSHARD                          } from './modules/local/luminome/predictshard/main'
include { LUMINOME_PREDICTSHARD as LUMINOME_PREDICTSHARD_CLASSIFY } from './modules/local/luminome/predictshard/main'
include { LUMINOME_PREDICTGATHER as LUMINOME_PREDICTGATHER_VARIANTS } from './modules/local/luminome/predictgather/main'
include { LUMINOME_PREDICTGATHER as LUMINOME_PREDICTGATHER_CLASSIFY } from './modules/local/luminome/predictgather/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_PRETRAIN      } from './modules/local/luminome/train/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_EXPRESSION    } from './modules/local/luminome/train/main'
include { LUMINOME_PREDICT as LUMINOME_PREDICT_EXPRESSION } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE as LUMINOME_IMPORTANCE_EXPRESSION } from './modules/local/luminome/importance/main'
include { LUMINOME_PREDICT                               } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE                            } from './modules/local/luminome/importance/main'
include { LUMINOME_IMPORTANCESHARD                       } from './modules/local/luminome/importanceshard/main'
include { LUMINOME_IMPORTANCEGATHER                      } from './modules/local/luminome/importancegather/main'
include { LUMINOME_PREDICTSHARD as LUMINOME_PREDICTSHARD_EXPRESSION } from './modules/local/luminome/predictshard/main'
include { LUMINOME_PREDICTGATHER as LUMINOME_PREDICTGATHER_EXPRESSION } from './modules/local/luminome/predictgather/main'
include { LUMINOME_IMPORTANCESHARD as LUMINOME_IMPORTANCESHARD_EXPRESSION } from './modules/local/luminome/importanceshard/main'
include { LUMINOME_IMPORTANCEGATHER as LUMINOME_IMPORTANCEGATHER_EXPRESSION } from './modules/local/luminome/importancegather/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_TABULAR       } from './modules/local/luminome/train/main'
include { LUMINOME_PREDICTSHARD as LUMINOME_PREDICTSHARD_TABULAR } from './modules/local/luminome/predictshard/main'
include { LUMINOME_PREDICTGATHER as LUMINOME_PREDICTGATHER_TABULAR } from './modules/local/luminome/predictgather/main'
include { LUMINOME_IMPORTANCESHARD as LUMINOME_IMPORTANCESHARD_TABULAR } from './modules/local/luminome/importanceshard/main'
include { LUMINOME_IMPORTANCEGATHER as LUMINOME_IMPORTANCEGATHER_TABULAR } from './modules/local/luminome/importancegather/main'
include { LUMINOME_PREDICT as LUMINOME_PREDICT_TABULAR   } from './modules/local/luminome/predict/main'
include { LUMINOME_IMPORTANCE as LUMINOME_IMPORTANCE_TABULAR } from './modules/local/luminome/importance/main'
include { LUMINOME_TOKENIZE as LUMINOME_TOKENIZE_PAIRS   } from './modules/local/luminome/tokenize/main'
include { LUMINOME_TOKENIZE as LUMINOME_TOKENIZE_CORPUS  } from './modules/local/luminome/tokenize/main'
include { LUMINOME_TRAIN as LUMINOME_TRAIN_DUAL          } from './modules/local/luminome/train/main'
include { LUMINOME_RETRIEVAL                             } from './modules/local/luminome/retrieval/main'

// A samplesheet path, relative to the samplesheet's folder unless absolute or a URL.
def samplesheetFile(value, baseDir) {
    def path = value.toString()
    def isRemoteOrAbsolute = path.startsWith('/') || path ==~ /^[A-Za-z][A-Za-z0-9+.-]*:\/\/.*/
    def location = isRemoteOrAbsolute ? path : baseDir.resolve(path).toString()
    return file(location, checkIfExists: true)
}

// samplesheetToList() types the values it reads ("1" -> 1, "true" -> true): the meta values
// (ids, args, pairs type) are strings to the rest of the pipeline.
def stringMeta(Map meta) {
    return meta.collectEntries { key, value -> [key, value.toString()] }
}

// A reference FASTA -> the nf-core reference tuple [ meta2, fasta, fai ]: the samtools index
// beside it when there is one, else [] (the tools then index the FASTA in memory).
def referenceTuple(fasta) {
    if (!fasta) {
        return [[], [], []]
    }
    def fai = fasta.resolveSibling("${fasta.name}.fai")
    return [[id: fasta.baseName], fasta, fai.exists() ? fai : []]
}

// One samplesheet row -> [ meta, sequences, reference tuple ]. meta.args (the samplesheet's
// args column) is read by conf/modules.config into ext.args, not by the module.
def tokenizeDataset(Map meta, input, reference, baseDir) {
    def fasta = reference ? samplesheetFile(reference, baseDir) : null
    return [stringMeta(meta), samplesheetFile(input, baseDir), referenceTuple(fasta)]
}

// "K562=a.bw;GM12878=b.bw" -> [ [cell types], [files] ] (paths relative to the CSV's folder;
// the schema checked the CELLTYPE=PATH form). An empty column ([]) gives [ [], [] ].
def cellTypeFiles(value, baseDir) {
    def pairs = (value ?: '').toString().split(';').findAll { it.trim() }.collect { entry ->
        def parts = entry.split('=', 2)
        [parts[0].trim(), samplesheetFile(parts[1].trim(), baseDir)]
    }
    return [pairs.collect { it[0] }, pairs.collect { it[1] }]
}

// One regions CSV row -> [ LUMINOME_REGIONS input tuple, reference tuple ]. The schema made sure
// of reference, accessibility, and genes or --tile-step in args.
def regionsRun(Map meta, reference, genes, peaks, accessibility, expression, motifs, motif_clusters, baseDir) {
    def (accTypes, accFiles) = cellTypeFiles(accessibility, baseDir)
    def (exprTypes, exprFiles) = cellTypeFiles(expression, baseDir)
    def runMeta = stringMeta(meta) + [accessibility: accTypes, expression: exprTypes]
    def optional = { value -> value ? samplesheetFile(value, baseDir) : [] }
    def peakFiles = (peaks ?: '').toString().split(';').findAll { it.trim() }.collect { samplesheetFile(it.trim(), baseDir) }
    return [[runMeta, optional(genes), peakFiles, accFiles, exprFiles, optional(motifs), optional(motif_clusters)],
            referenceTuple(samplesheetFile(reference, baseDir))]
}

// One pairs CSV row -> [ meta, sequences, strand_b, variants, reference tuple ]; a variants row's
// `sequences` column is the reference (sequences is then []), other rows have no reference. The
// schema made sure of the type, and that strand_b goes with fasta_pair and variants with variants.
def pairsDataset(Map meta, sequences, strand_b, variants, baseDir) {
    def pairMeta = stringMeta(meta)
    def sequencesFile = samplesheetFile(sequences, baseDir)
    def strandB = strand_b ? samplesheetFile(strand_b, baseDir) : []
    def variantsFile = variants ? samplesheetFile(variants, baseDir) : []
    if (pairMeta.type == 'variants') {
        return [pairMeta, [], strandB, variantsFile, referenceTuple(sequencesFile)]
    }
    return [pairMeta, sequencesFile, strandB, variantsFile, referenceTuple(null)]
}

// A channel of [ id, dataset, sidecars ] -> [ dataset, sidecars ] of one id, or [ [], [] ] (none)
// when id is empty. Sidecars are the files a tool reads from beside the dataset (a token or pair
// dataset's .index.tsv; a region dataset's .samples.tsv and .regions.tsv): they are staged with it.
def datasetOf(ch, String id) {
    return id
        ? ch.filter { entryId, _dataset, _sidecars -> entryId == id }.map { _id, dataset, sidecars -> [dataset, sidecars] }
        : channel.value([[], []])   // combine spreads it into two empty elements
}

// A channel of [ meta, dataset, sidecars ] -> one entry per part 1..shards, meta gaining
// shard/shards (what the *SHARD modules read).
def shardsOf(ch, int shards) {
    return ch
        .combine(channel.of(1..shards))
        .map { meta, dataset, sidecars, shard -> [meta + [shard: shard, shards: shards], dataset, sidecars] }
}

workflow {
    main:
    // Types, patterns, required --input/--outdir, files that must exist, parameters that need
    // others, and the three CSVs against their schemas; a misspelt parameter is an error.
    validateParameters()

    def samplesheet = file(params.input, checkIfExists: true)
    ch_samplesheet = channel.fromList(samplesheetToList(params.input, "assets/schema_input.json"))
        .map { meta, input, reference -> tokenizeDataset(meta, input, reference, samplesheet.parent) }
    ch_datasets = ch_samplesheet
        .multiMap { meta, sequences, reference ->
            sequences: [meta, sequences]
            reference: reference
        }

    // --tokenize_shards N > 1: N tasks tokenize blocks of 1,024 records or windows each, dealt
    // round robin (LUMINOME_TOKENIZESHARD), and LUMINOME_TOKENIZEGATHER, on one CPU, joins their
    // parts into the dataset of one task, byte for byte; -resume reruns only a failed part.
    def tokenizeShards = params.tokenize_shards as int
    if (tokenizeShards > 1) {
        ch_shard_in = ch_samplesheet
            .combine(channel.of(1..tokenizeShards))
            .multiMap { meta, sequences, reference, shard ->
                sequences: [meta + [shard: shard, shards: tokenizeShards], sequences]
                reference: reference
            }
        LUMINOME_TOKENIZESHARD(ch_shard_in.sequences, ch_shard_in.reference)
        ch_gather = ch_samplesheet
            .map { meta, sequences, reference -> [meta.id, meta, sequences, reference] }
            .join(
                LUMINOME_TOKENIZESHARD.out.part
                    .map { meta, part -> [meta.id, part] }
                    .groupTuple(size: tokenizeShards, sort: true)
            )
            .multiMap { _id, meta, sequences, reference, parts ->
                sequences: [meta, sequences]
                reference: reference
                parts: parts
            }
        LUMINOME_TOKENIZEGATHER(ch_gather.sequences, ch_gather.reference, ch_gather.parts)
        ch_tokenized = LUMINOME_TOKENIZEGATHER.out.tokens.join(LUMINOME_TOKENIZEGATHER.out.index)
    } else {
        LUMINOME_TOKENIZE(ch_datasets.sequences, ch_datasets.reference)
        ch_tokenized = LUMINOME_TOKENIZE.out.tokens.join(LUMINOME_TOKENIZE.out.index)
    }
    // [ id, dataset, index ]: every step that reads a token dataset stages its index too.
    ch_tokens = ch_tokenized
        .map { meta, tokens, index -> [meta.id, tokens, index] }

    // Regions: a CSV (--regions_input) with id,reference,genes,peaks,accessibility,expression,motifs,motif_clusters,args
    if (params.regions_input) {
        def regionsCsv = file(params.regions_input, checkIfExists: true)
        ch_regions_rows = channel.fromList(samplesheetToList(params.regions_input, "assets/schema_regions.json"))
            .map { meta, reference, genes, peaks, accessibility, expression, motifs, motif_clusters ->
                regionsRun(meta, reference, genes, peaks, accessibility, expression, motifs, motif_clusters, regionsCsv.parent)
            }
        ch_regions = ch_regions_rows
            .multiMap { run, reference ->
                run: run
                reference: reference
            }
        // --regions_shards N > 1: N tasks each scan a share of the regions' chunks and count every
        // Nth cell type (LUMINOME_REGIONSSHARD), and LUMINOME_REGIONSGATHER, on one CPU, windows
        // and writes the dataset of one task from their parts, byte for byte; -resume reruns
        // only a failed part.
        def regionsShards = params.regions_shards as int
        if (regionsShards > 1) {
            ch_regions_part_in = ch_regions_rows
                .combine(channel.of(1..regionsShards))
                .multiMap { run, reference, shard ->
                    run: [run[0] + [shard: shard, shards: regionsShards]] + run.drop(1)
                    reference: reference
                }
            LUMINOME_REGIONSSHARD(ch_regions_part_in.run, ch_regions_part_in.reference)
            ch_regions_gather = ch_regions_rows
                .map { run, reference -> [run[0].id, run, reference] }
                .join(
                    LUMINOME_REGIONSSHARD.out.part
                        .map { meta, part -> [meta.id, part] }
                        .groupTuple(size: regionsShards, sort: true)
                )
                .multiMap { _id, run, reference, parts ->
                    run: run
                    reference: reference
                    parts: parts
                }
            LUMINOME_REGIONSGATHER(ch_regions_gather.run, ch_regions_gather.reference, ch_regions_gather.parts)
            ch_regions_out = LUMINOME_REGIONSGATHER.out
        } else {
            LUMINOME_REGIONS(ch_regions.run, ch_regions.reference)
            ch_regions_out = LUMINOME_REGIONS.out
        }

        // Expression: --expression_dataset (a regions id, with expression) trains an expression
        // model, from the encoder pretrained on --pretrain_dataset (a regions id, e.g. tiles)
        // when given; the model then predicts and explains its held-out samples.
        if (params.expression_dataset) {
            ch_region_sets = ch_regions_out.dataset
                .join(ch_regions_out.samples)
                .join(ch_regions_out.regions)
                .map { meta, dataset, samples, regions -> [meta.id, dataset, [samples, regions]] }
            ch_init_expression = channel.value([[], []])
            if (params.pretrain_dataset) {
                LUMINOME_TRAIN_PRETRAIN(
                    datasetOf(ch_region_sets, params.pretrain_dataset)
                        .map { dataset, tables -> [[id: "${params.pretrain_dataset}_pretrain"], dataset, tables, [], []] },
                    [[], []],
                    'region-pretrain'
                )
                ch_init_expression = LUMINOME_TRAIN_PRETRAIN.out.best
            }
            ch_expression_data = datasetOf(ch_region_sets, params.expression_dataset)
                .map { dataset, tables -> [[id: "${params.expression_dataset}_expression"], dataset, tables] }
            LUMINOME_TRAIN_EXPRESSION(
                ch_expression_data.map { meta, dataset, tables -> [meta, dataset, tables, [], []] },
                ch_init_expression,
                'expression'
            )
            // --predict_shards / --importance_shards N > 1: as for the classifier below, N
            // tasks of whole batches (or passes) each and a gather on one CPU: the same bytes.
            def predictShards = params.predict_shards as int
            def importanceShards = params.importance_shards as int
            def ch_expression_model = LUMINOME_TRAIN_EXPRESSION.out.best
            if (predictShards > 1) {
                LUMINOME_PREDICTSHARD_EXPRESSION(shardsOf(ch_expression_data, predictShards), ch_expression_model.first())
                LUMINOME_PREDICTGATHER_EXPRESSION(
                    ch_expression_data.map { meta, dataset, tables -> [meta, dataset, tables, []] },
                    ch_expression_model,
                    LUMINOME_PREDICTSHARD_EXPRESSION.out.part.map { _meta, part -> part }.collect(sort: true)
                )
            } else {
                LUMINOME_PREDICT_EXPRESSION(ch_expression_data, ch_expression_model)
            }
            if (params.expression_importance_args && importanceShards > 1) {
                LUMINOME_IMPORTANCESHARD_EXPRESSION(shardsOf(ch_expression_data, importanceShards), ch_expression_model.first())
                LUMINOME_IMPORTANCEGATHER_EXPRESSION(
                    ch_expression_data,
                    ch_expression_model,
                    LUMINOME_IMPORTANCESHARD_EXPRESSION.out.part.map { _meta, part -> part }.collect(sort: true)
                )
            } else if (params.expression_importance_args) {
                LUMINOME_IMPORTANCE_EXPRESSION(ch_expression_data, ch_expression_model)
            }
        }
    }

    // Models: the samplesheet ids named by --train_dataset, --dev_dataset, --predict_dataset.
    if (params.train_dataset) {
        ch_train_dev = datasetOf(ch_tokens, params.train_dataset).combine(datasetOf(ch_tokens, params.dev_dataset))

        ch_init = channel.value([[], []])
        if (params.mlm) {
            LUMINOME_TRAIN_MLM(
                ch_train_dev.map { train, train_index, dev, dev_index -> [[id: "${params.train_dataset}_mlm"], train, train_index, dev, dev_index] },
                [[], []],
                'mlm'
            )
            ch_init = LUMINOME_TRAIN_MLM.out.best
        }
        LUMINOME_TRAIN_CLASSIFY(
            ch_train_dev.map { train, train_index, dev, dev_index -> [[id: "${params.train_dataset}_classify"], train, train_index, dev, dev_index] },
            ch_init,
            'classify'
        )

        if (params.predict_dataset) {
            ch_predict = datasetOf(ch_tokens, params.predict_dataset)
                .map { dataset, index -> [[id: params.predict_dataset], dataset, index] }
            // --predict_shards N > 1: N tasks predict whole batches each
            // (LUMINOME_PREDICTSHARD_CLASSIFY), and LUMINOME_PREDICTGATHER_CLASSIFY, on one CPU
            // and never a GPU, gathers their parts into the predictions and metrics of one task;
            // -resume reruns only a failed part.
            def predictShards = params.predict_shards as int
            if (predictShards > 1) {
                def ch_parts_in = ch_predict
                    .combine(channel.of(1..predictShards))
                    .map { meta, dataset, index, shard -> [meta + [shard: shard, shards: predictShards], dataset, index] }
                LUMINOME_PREDICTSHARD_CLASSIFY(ch_parts_in, LUMINOME_TRAIN_CLASSIFY.out.best.first())
                LUMINOME_PREDICTGATHER_CLASSIFY(
                    ch_predict.map { meta, dataset, index -> [meta, dataset, index, []] },
                    LUMINOME_TRAIN_CLASSIFY.out.best,
                    LUMINOME_PREDICTSHARD_CLASSIFY.out.part.map { _meta, part -> part }.collect(sort: true)
                )
            } else {
                LUMINOME_PREDICT(ch_predict, LUMINOME_TRAIN_CLASSIFY.out.best)
            }
            if (params.importance_args) {
                // --importance_shards N > 1: N tasks explain whole passes of the selected records
                // each (LUMINOME_IMPORTANCESHARD), and LUMINOME_IMPORTANCEGATHER, on one CPU and
                // never a GPU, joins their parts into the outputs of one task.
                def importanceShards = params.importance_shards as int
                if (importanceShards > 1) {
                    def ch_explain_in = ch_predict
                        .combine(channel.of(1..importanceShards))
                        .map { meta, dataset, index, shard -> [meta + [shard: shard, shards: importanceShards], dataset, index] }
                    LUMINOME_IMPORTANCESHARD(ch_explain_in, LUMINOME_TRAIN_CLASSIFY.out.best.first())
                    LUMINOME_IMPORTANCEGATHER(
                        ch_predict,
                        LUMINOME_TRAIN_CLASSIFY.out.best,
                        LUMINOME_IMPORTANCESHARD.out.part.map { _meta, part -> part }.collect(sort: true)
                    )
                } else {
                    LUMINOME_IMPORTANCE(ch_predict, LUMINOME_TRAIN_CLASSIFY.out.best)
                }
            }
        }
    }

    // Bi-strand masked LM: a pairs CSV (--pairs_input) with id,type,sequences,strand_b,variants,args;
    // --bistrand_train / --bistrand_dev / --variants_dataset name its ids.
    if (params.pairs_input) {
        def pairsCsv = file(params.pairs_input, checkIfExists: true)
        ch_pairs_in = channel.fromList(samplesheetToList(params.pairs_input, "assets/schema_pairs.json"))
            .map { meta, sequences, strand_b, variants -> pairsDataset(meta, sequences, strand_b, variants, pairsCsv.parent) }
            .multiMap { meta, sequences, strand_b, variants, reference ->
                inputs: [meta, sequences, strand_b, variants]
                reference: reference
            }
        LUMINOME_MASKPAIRS(ch_pairs_in.inputs, ch_pairs_in.reference)

        if (params.bistrand_train) {
            ch_pairs = LUMINOME_MASKPAIRS.out.pairs
                .join(LUMINOME_MASKPAIRS.out.index)
                .map { meta, pairs, index -> [meta.id, pairs, index] }
            LUMINOME_TRAIN_BISTRAND(
                datasetOf(ch_pairs, params.bistrand_train)
                    .combine(datasetOf(ch_pairs, params.bistrand_dev))
                    .map { train, train_index, dev, dev_index -> [[id: "${params.bistrand_train}_bistrand"], train, train_index, dev, dev_index] },
                [[], []],
                'bistrand'
            )
            if (params.variants_dataset) {
                // The scored VCF copies the records of the variants file the dataset was built from.
                ch_variants = ch_pairs_in.inputs.map { meta, _sequences, _strand_b, variants -> [meta.id, variants] }
                ch_score = ch_pairs
                    .filter { id, _pairs, _index -> id == params.variants_dataset }
                    .join(ch_variants)
                    .map { id, pairs, index, variants -> [[id: id], pairs, index, variants] }
                // --variant_shards N > 1: N tasks score whole batches each (LUMINOME_PREDICTSHARD),
                // and LUMINOME_PREDICTGATHER_VARIANTS, on one CPU and never a GPU, gathers their
                // parts into the outputs of one run; -resume reruns only a failed part.
                def shards = params.variant_shards as int
                if (shards > 1) {
                    def ch_model = LUMINOME_TRAIN_BISTRAND.out.best.first()
                    def ch_shards = ch_score
                        .combine(channel.of(1..shards))
                        .map { meta, pairs, index, _variants, shard -> [meta + [shard: shard, shards: shards], pairs, index] }
                    LUMINOME_PREDICTSHARD(ch_shards, ch_model)
                    LUMINOME_PREDICTGATHER_VARIANTS(
                        ch_score,
                        LUMINOME_TRAIN_BISTRAND.out.best,
                        LUMINOME_PREDICTSHARD.out.part.map { _meta, part -> part }.collect(sort: true)
                    )
                } else {
                    LUMINOME_PREDICTVARIANTS(ch_score, LUMINOME_TRAIN_BISTRAND.out.best)
                }
            }
        }
    }

    // Tabular classifier: --tabular_table (a CSV/TSV feature table) with --tabular_args naming
    // at least its --label column; the model predicts and explains --tabular_predict_table.
    if (params.tabular_table) {
        def table = file(params.tabular_table, checkIfExists: true)
        def id = table.baseName.replaceAll(/\.(tsv|csv|txt|tab)$/, '')
        LUMINOME_TRAIN_TABULAR(channel.value([[id: "${id}_tabular"], table, [], [], []]), [[], []], 'tabular')
        if (params.tabular_predict_table) {
            // A table has no sidecars.
            ch_tabular = channel.value([[id: "${id}_tabular"], file(params.tabular_predict_table, checkIfExists: true), []])
            def ch_tabular_model = LUMINOME_TRAIN_TABULAR.out.best
            def predictShards = params.predict_shards as int
            def importanceShards = params.importance_shards as int
            if (predictShards > 1) {
                LUMINOME_PREDICTSHARD_TABULAR(shardsOf(ch_tabular, predictShards), ch_tabular_model.first())
                LUMINOME_PREDICTGATHER_TABULAR(
                    ch_tabular.map { meta, table, none -> [meta, table, none, []] },
                    ch_tabular_model,
                    LUMINOME_PREDICTSHARD_TABULAR.out.part.map { _meta, part -> part }.collect(sort: true)
                )
            } else {
                LUMINOME_PREDICT_TABULAR(ch_tabular, ch_tabular_model)
            }
            if (params.tabular_importance_args && importanceShards > 1) {
                LUMINOME_IMPORTANCESHARD_TABULAR(shardsOf(ch_tabular, importanceShards), ch_tabular_model.first())
                LUMINOME_IMPORTANCEGATHER_TABULAR(
                    ch_tabular,
                    ch_tabular_model,
                    LUMINOME_IMPORTANCESHARD_TABULAR.out.part.map { _meta, part -> part }.collect(sort: true)
                )
            } else if (params.tabular_importance_args) {
                LUMINOME_IMPORTANCE_TABULAR(ch_tabular, ch_tabular_model)
            }
        }
    }

    // Dual encoder: pair tables tokenized with --format pairs, trained with luminome-train dual,
    // and the test queries ranked against the corpus FASTA (tokenized the same way).
    if (params.dual_train) {
        def pair_tables = [train: params.dual_train, dev: params.dual_dev, test: params.dual_test]
            .findAll { _split, path -> path }
            .collect { split, path -> [[id: "dual_${split}", split: split], file(path, checkIfExists: true)] }
        LUMINOME_TOKENIZE_PAIRS(channel.fromList(pair_tables), [[], [], []])
        // [ split, dataset, index ] per pairs dataset
        ch_pairs_ds = LUMINOME_TOKENIZE_PAIRS.out.tokens
            .join(LUMINOME_TOKENIZE_PAIRS.out.index)
            .map { meta, tokens, index -> [meta.split, tokens, index] }
        ch_dual_input = datasetOf(ch_pairs_ds, 'train')
            .combine(datasetOf(ch_pairs_ds, params.dual_dev ? 'dev' : ''))
            .map { train, train_index, dev, dev_index -> [[id: 'dual'], train, train_index, dev, dev_index] }
        LUMINOME_TRAIN_DUAL(ch_dual_input, [[], []], 'dual')
        if (params.dual_test) {
            ch_test_pairs = datasetOf(ch_pairs_ds, 'test').map { pairs, index -> [[id: 'dual_test'], pairs, index] }
            if (params.dual_corpus) {
                LUMINOME_TOKENIZE_CORPUS(channel.value([[id: 'dual_corpus'], file(params.dual_corpus, checkIfExists: true)]), [[], [], []])
                ch_corpus = LUMINOME_TOKENIZE_CORPUS.out.tokens.join(LUMINOME_TOKENIZE_CORPUS.out.index)
            } else {
                ch_corpus = channel.value([[], [], []])
            }
            LUMINOME_RETRIEVAL(ch_test_pairs, ch_corpus, LUMINOME_TRAIN_DUAL.out.best)
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
