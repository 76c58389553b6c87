// nlpzoo data: prepares the corpora the reference models train on.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "datasets/bible.h"
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

}  // namespace

NLPZOO_REGISTER_COMMAND(data_bible, "data bible",
                        "export Spanish-English Bible verse pairs and English text (SWORD)",
                        run_data_bible);

}  // namespace nlpzoo::cli
