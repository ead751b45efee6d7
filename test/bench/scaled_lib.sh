# Sourced by the join benchmarks: builds a table of the textcorpus documents' spot signatures
# scaled with scale_corpus.cpp, the corpus join_bench.sh describes. Needs here, OUT, corpus,
# VARIANT_SHARE, SEED, SCALE_MODE and psql_q from the caller, and a database where the caller may
# create tables.

# load_base: creates table corpus_base (id, sig: the textcorpus documents' spot signatures) in a
# database that lacks it.
load_base() {
  psql_q -c "CREATE EXTENSION IF NOT EXISTS spotsigs"
  if [[ $(psql_q -c "SELECT to_regclass('corpus_base') IS NULL") == t ]]; then
    psql_q -c "DROP TABLE IF EXISTS corpus_docs" \
      -c "CREATE TABLE corpus_docs (id bigint PRIMARY KEY, source text, title text, body text)"
    psql_q -c "\\copy corpus_docs from program 'zcat \"$corpus/docs.tsv.gz\"'"
    psql_q -c "CREATE TABLE corpus_base AS SELECT id, spotsigs(title || E'\\n' || body) AS sig FROM corpus_docs"
  fi
}

# load_scaled TABLE ROWS: creates TABLE (id bigint PRIMARY KEY, sig spotsig) with the first ROWS
# rows of the scaled corpus, piped straight into COPY (no intermediate file: 10M rows are
# ~15 GB of text); scale_corpus's summary goes to OUT/scale.log. The base documents' signatures
# are extracted once per database (table corpus_base).
load_scaled() {
  local table=$1 rows=$2
  g++ -std=c++17 -O2 -o "$OUT/scale_corpus" "$here/scale_corpus.cpp"
  load_base
  psql_q -c "\\copy (SELECT id, sig FROM corpus_base ORDER BY id) to '$OUT/base.tsv'"
  "$OUT/scale_corpus" "$rows" "$VARIANT_SHARE" "$SEED" "$SCALE_MODE" < "$OUT/base.tsv" 2>"$OUT/scale.log" |
    psql_q -1 -c "CREATE TABLE $table (id bigint, sig spotsig)" -c "COPY $table FROM STDIN"
  rm -f "$OUT/base.tsv"
  psql_q -c "ALTER TABLE $table ADD PRIMARY KEY (id)" -c "VACUUM ANALYZE $table"
}
