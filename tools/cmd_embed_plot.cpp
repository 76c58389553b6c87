// nlpzoo embed plot: a 2-D picture of word vectors (PCA or t-SNE, infer/projection.h) as PNG.
#include <algorithm>
#include <iostream>

#include "core/io.h"
#include "infer/embedding_queries.h"
#include "infer/debias.h"
#include "infer/projection.h"
#include "infer/scatter_plot.h"
#include "tools/command.h"
#include "tools/embed_flags.h"
#include "tools/options.h"

namespace nlpzoo::cli {
namespace {

int run_plot(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  const TsneOptions td;
  const ScatterPlotOptions pd;
  desc.add_options()
      ("words", po::value<std::string>(), "words to plot, one or more per line ('#' lines skipped)")
      ("top", po::value<int64_t>(), "plot the first N rows (the most frequent words) instead of --words")
      ("method", po::value<std::string>()->default_value("pca"),
       "pca: the two principal axes (SVD of the centred vectors); tsne: t-SNE (van der Maaten & "
       "Hinton 2008), exact, O(N^2) per step: fine up to a few thousand words")
      ("out", po::value<std::string>(), "PNG file to write (atomically; required)")
      ("perplexity", po::value<double>()->default_value(td.perplexity),
       "t-SNE: effective number of neighbours; must be below the number of words - 1")
      ("iterations", po::value<int64_t>()->default_value(td.iterations), "t-SNE: gradient steps")
      ("learning-rate", po::value<double>()->default_value(td.learning_rate),
       "t-SNE: step size; 0 = auto, max(words / 48, 50) (scikit-learn's default)")
      ("seed", po::value<uint64_t>()->default_value(td.seed), "t-SNE: seed of the initial points")
      ("title", po::value<std::string>(), "text above the plot (default: the method and word count)")
      ("width", po::value<int>()->default_value(pd.width), "image width in pixels")
      ("height", po::value<int>()->default_value(pd.height), "image height in pixels");
  auto vm = parse_args(args, desc, "embed plot --vectors FILE (--words FILE | --top N) [--method pca|tsne] --out FILE.png");
  if (!vm) return 0;
  if (!vm->count("out")) throw UserError("--out FILE.png is required");
  if (vm->count("words") == vm->count("top")) throw UserError("give exactly one of --words FILE and --top N");
  const auto method = (*vm)["method"].as<std::string>();
  if (method != "pca" && method != "tsne") throw UserError("--method " + method + ": expected pca or tsne");
  std::vector<std::string> wanted;
  if (vm->count("words")) wanted = read_word_list((*vm)["words"].as<std::string>());
  const auto vectors = vectors_from_flags(*vm);
  std::vector<int64_t> rows;
  if (vm->count("top")) {
    const int64_t top = (*vm)["top"].as<int64_t>();
    if (top < 2) throw UserError("--top: must be at least 2");
    for (int64_t i = 0; i < std::min(top, vectors.size()); ++i) rows.push_back(i);
  } else {
    for (const auto& w : wanted)
      rows.push_back(require_word(vectors, w, vectors_name(*vm) + "; listed in --words " +
                                                  (*vm)["words"].as<std::string>()));
  }
  if (rows.size() < 2) throw UserError("a plot needs at least 2 words (got " + std::to_string(rows.size()) + ")");
  std::vector<std::string> labels;
  for (int64_t r : rows) labels.push_back(vectors.words()[r]);
  const auto x = vectors.vectors().index_select(0, torch::tensor(rows, torch::kInt64));  // [N, D]

  ScatterPlotOptions plot_options;
  plot_options.width = (*vm)["width"].as<int>();
  plot_options.height = (*vm)["height"].as<int>();
  if (plot_options.width < 200 || plot_options.height < 150 || plot_options.width > 10000 || plot_options.height > 10000)
    throw UserError("--width/--height: the image must be between 200x150 and 10000x10000 pixels");
  torch::Tensor points;
  const auto n = static_cast<int64_t>(rows.size());
  if (method == "pca") {
    if (x.size(1) < 2) throw UserError("--method pca: the vectors need at least 2 dimensions");
    const auto p = pca(x, 2);
    points = p.points;
    plot_options.x_label = "PC1 (" + fixed(100 * p.explained_variance_ratio[0].item<double>(), 1) + "% of variance)";
    plot_options.y_label = "PC2 (" + fixed(100 * p.explained_variance_ratio[1].item<double>(), 1) + "% of variance)";
  } else {
    TsneOptions t;
    t.perplexity = (*vm)["perplexity"].as<double>();
    t.iterations = (*vm)["iterations"].as<int64_t>();
    t.learning_rate = (*vm)["learning-rate"].as<double>();
    t.seed = (*vm)["seed"].as<uint64_t>();
    if (!(t.perplexity > 0) || t.perplexity >= n - 1)
      throw UserError("--perplexity " + fixed(t.perplexity, 1) + ": must be above 0 and below the number of words - 1 (" +
                      std::to_string(n - 1) + ")");
    if (t.iterations < 0) throw UserError("--iterations: must be >= 0");
    if (!(t.learning_rate >= 0)) throw UserError("--learning-rate: must be >= 0 (0 = auto)");
    points = tsne(x, t);
    plot_options.x_label = "t-SNE 1";
    plot_options.y_label = "t-SNE 2";
  }
  plot_options.title = vm->count("title") ? (*vm)["title"].as<std::string>()
                                 : (method == "pca" ? "PCA of " : "t-SNE of ") + std::to_string(n) + " word vectors";
  const auto out = (*vm)["out"].as<std::string>();
  plot_scatter_png(out, points, labels, plot_options);
  std::cout << "wrote " << out << " (" << n << " words, " << method << ")" << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(embed_plot, "embed plot", "2-D picture of word vectors (PCA or t-SNE) as PNG", run_plot);

}  // namespace nlpzoo::cli
