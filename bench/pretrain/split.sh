# shellcheck shell=bash
# Sourced by the genome-pretraining scripts: the dev split of a genome, once.
# split_genome FASTA WORK writes WORK/train.bed and WORK/dev.bed: for each record, dev = its last
# ~10 %, the cut rounded to the nearest Mb for records of 20 Mb and more (chr22: 46,000,000), else
# to the nearest kb. Whole windows never straddle it.
split_genome() {
    local fasta=$1 work=$2
    [ -f "$work/train.bed" ] && return 0
    (case $fasta in *.gz) gzip -dc "$fasta" ;; *) cat "$fasta" ;; esac) | awk '
        function out() { if (n != "") { u = (l >= 20000000) ? 1000000 : 1000;
            c = int(l * 0.9 / u + 0.5) * u;
            if (c > 0) print n "\t0\t" c > tr; if (c < l) print n "\t" c "\t" l > dv } }
        /^>/ { out(); n = substr($1, 2); l = 0; next } { l += length($0) } END { out() }
    ' tr="$work/train.bed" dv="$work/dev.bed"
}
