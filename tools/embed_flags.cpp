#include "tools/embed_flags.h"

#include <cmath>
#include <cstdio>

#include "core/io.h"
#include "train/tasks/run_word_vectors.h"

namespace nlpzoo::cli {

void add_vector_flags(po::options_description& desc) {
  desc.add_options()
      ("vectors", po::value<std::string>(),
       "word vectors in word2vec text or binary format (detected from the bytes), e.g. a .vec "
       "file; rows are taken to be listed by descending frequency, as word2vec writes them")
      ("run-dir", po::value<std::string>(),
       "instead of --vectors: the run folder of a trained word-vector model (a task that offers "
       "word vectors, e.g. word2vec)")
      ("checkpoint", po::value<std::string>()->default_value("last"),
       "with --run-dir: last (the vectors at the end of training, what word2vec.c, gensim and glove.c "
       "output) or best (lowest held-out loss, which for GloVe bottoms out epochs before the vectors are best)");
}

WordVectors vectors_from_flags(const po::variables_map& vm, OovVectors* oov) {
  const bool file = vm.count("vectors") > 0, run = vm.count("run-dir") > 0;
  if (file && run) throw UserError("--vectors and --run-dir: give only one source of word vectors");
  if (file) return read_word_vectors(vm["vectors"].as<std::string>());
  if (!run) throw UserError("--vectors FILE (word2vec text or binary) or --run-dir RUN is required");
  const auto run_dir = vm["run-dir"].as<std::string>();
  return run_word_vectors(checkpoint_in(run_dir, vm["checkpoint"].as<std::string>()), "--run-dir " + run_dir, oov);
}

std::string vectors_name(const po::variables_map& vm) {
  if (vm.count("vectors")) return "--vectors " + vm["vectors"].as<std::string>();
  return vm.count("run-dir") ? "--run-dir " + vm["run-dir"].as<std::string>() : "the vectors";
}

int64_t restrict_flag(const po::variables_map& vm, const std::string& name) {
  const int64_t n = vm[name].as<int64_t>();
  if (n < 0) throw UserError("--" + name + ": must be >= 0 (0 = every word), got " + std::to_string(n));
  return n;
}

bool parse_format(const std::string& format) {
  if (format == "text") return false;
  if (format == "binary") return true;
  throw UserError("--format " + format + ": expected text or binary");
}

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace nlpzoo::cli
