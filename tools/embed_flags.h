#pragma once
// The flags every `nlpzoo embed` subcommand shares (tools/cmd_embed*.cpp).
//
// THE SEAM: where every `embed` subcommand obtains its word vectors: from a word2vec file
// (--vectors) or from a trained run whose task is a WordVectorSource (--run-dir), and nowhere
// else. Queries (similar, analogy) may also ask the run for words outside its table
// (WordVectorSource::oov_vector, e.g. a subword model's n-grams); evaluations never do (gensim's
// convention: a question with an unknown word is not covered).
#include <string>

#include "datasets/word_vectors.h"
#include "infer/embedding_queries.h"
#include "tools/options.h"

namespace nlpzoo::cli {

/// --vectors FILE, --run-dir RUN, --checkpoint last|best.
void add_vector_flags(po::options_description& desc);

/// The vectors those flags name. `oov`, when given, receives the run's vectors for words outside
/// the table (left empty for --vectors files and for runs that cannot make them).
WordVectors vectors_from_flags(const po::variables_map& vm, OovVectors* oov = nullptr);

/// "--vectors FILE" or "--run-dir RUN", for messages.
std::string vectors_name(const po::variables_map& vm);

/// --NAME N with N >= 0 (0 = every word).
int64_t restrict_flag(const po::variables_map& vm, const std::string& name);

/// --format text|binary: true for binary.
bool parse_format(const std::string& format);

/// `v` with `digits` decimals, "n/a" for NaN.
std::string fixed(double v, int digits);

}  // namespace nlpzoo::cli
