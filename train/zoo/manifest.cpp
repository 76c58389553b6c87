#include "train/zoo/manifest.h"

#include <algorithm>
#include <filesystem>

#include "core/child_process.h"
#include "core/io.h"

namespace fs = std::filesystem;

namespace nlpzoo::zoo {
void validate_manifest(const json& m, const std::string& path) {
  if (!m.contains("models") || !m["models"].is_object() || m["models"].empty())
    throw UserError(path + ": no \"models\" object");
  for (const auto& [name, e] : m["models"].items()) {
    for (const char* key : {"config", "data", "budget_steps", "seed", "threads"})
      if (!e.contains(key)) throw UserError(path + ": model '" + name + "' has no \"" + key + "\"");
    if (e.contains("init_from")) {
      const auto& from = e["init_from"];
      if (!from.is_string() || !m["models"].contains(from.get<std::string>()) || from.get<std::string>() == name)
        throw UserError(path + ": model '" + name + "': \"init_from\" must name another model of the manifest, got " +
                        from.dump());
      if (m["models"][from.get<std::string>()].contains("init_from"))
        throw UserError(path + ": model '" + name + "': its init_from '" + from.get<std::string>() +
                        "' is itself fine-tuned; init_from names a pre-trained model");
    }
  }
}

json read_manifest(const std::string& path) {
  require_file(path, "the reference models' manifest");
  json m;
  try {
    m = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw UserError(path + ": not valid JSON (" + e.what() + ")");
  }
  validate_manifest(m, path);
  return m;
}

std::vector<std::string> chosen_models(const json& manifest, const std::vector<std::string>& names,
                                       const std::string& path) {
  if (names.empty()) {
    std::vector<std::string> all;
    for (const auto& [k, v] : manifest["models"].items()) all.push_back(k);
    return all;
  }
  for (const auto& n : names)
    if (!manifest["models"].contains(n)) {
      std::string known;
      for (const auto& [k, v] : manifest["models"].items()) known += (known.empty() ? "" : ", ") + k;
      throw UserError("'" + n + "' is not a model of " + path + " (" + known + ")");
    }
  return names;
}

std::vector<std::string> training_order(const json& manifest, const std::vector<std::string>& names) {
  std::vector<std::string> order;
  const auto place = [&](const std::string& n) {
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  };
  for (const auto& n : names) {
    const auto& e = manifest["models"][n];
    if (e.contains("init_from")) {
      const auto from = e["init_from"].get<std::string>();
      if (std::find(names.begin(), names.end(), from) != names.end()) place(from);
    }
    place(n);
  }
  return order;
}

std::vector<std::string> input_files(const json& entry) {
  std::vector<std::string> files = {entry["config"].get<std::string>()};
  const auto dir = entry["data"].value("dir", std::string());
  for (const auto& f : entry["data"].value("files", json::array())) files.push_back(dir + "/" + f.get<std::string>());
  return files;
}

std::string sha256_of_file(const std::string& path) {
  const auto r = run_child("sha256sum", {"--", path});
  if (r.status != 0 || r.out.size() < 64) throw UserError(path + ": cannot compute its sha256 (sha256sum failed)");
  return r.out.substr(0, 64);
}

std::string fingerprint_mismatch(const json& entry) {
  const auto recorded = entry.value("fingerprint", json::object());
  for (const auto& file : input_files(entry)) {
    if (!recorded.contains(file) || recorded[file].is_null()) continue;
    if (!fs::exists(file)) return file + " is missing";
    if (sha256_of_file(file) != recorded[file].get<std::string>()) return file + " differs from the manifest's";
  }
  return "";
}

std::string copy_dir(const std::string& root, const std::string& name) { return (fs::path(root) / name).string(); }

}  // namespace nlpzoo::zoo
