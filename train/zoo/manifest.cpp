#include "train/zoo/manifest.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/child_process.h"
#include "core/config.h"
#include "core/io.h"

namespace fs = std::filesystem;

namespace nlpzoo::zoo {
namespace {

// Checks one entry's keys; every error names the manifest, the model and the key.
class EntryChecker {
 public:
  EntryChecker(const std::string& path, const std::string& name) : where_(path + ": model '" + name + "': ") {}

  [[noreturn]] void fail(const std::string& key, const std::string& what, const json& got) const {
    throw UserError(where_ + "\"" + key + "\" must be " + what + ", got " + got.dump());
  }
  // The object's keys must be among `known`.
  void known_keys(const json& object, const std::string& key, const std::set<std::string>& known) const {
    for (const auto& [k, v] : object.items()) {
      if (known.count(k)) continue;
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      throw UserError(where_ + "unknown key \"" + (key.empty() ? k : key + "." + k) + "\" (known: " + list + ")");
    }
  }
  void string(const json& v, const std::string& key) const {
    if (!v.is_string()) fail(key, "a string", v);
  }
  void integer(const json& v, const std::string& key, int64_t min, const std::string& what) const {
    if (!v.is_number_integer() || v.get<int64_t>() < min) fail(key, what, v);
  }
  void number(const json& v, const std::string& key) const {
    if (!v.is_number()) fail(key, "a number", v);
  }
  void object(const json& v, const std::string& key, const std::string& what) const {
    if (!v.is_object()) fail(key, what, v);
  }
  void strings(const json& v, const std::string& key) const {
    if (!v.is_array()) fail(key, "an array of strings", v);
    for (const auto& s : v)
      if (!s.is_string()) fail(key, "an array of strings", v);
  }
  void has(const json& object, const std::string& key, const std::string& prefix = "") const {
    if (!object.contains(key)) throw UserError(where_.substr(0, where_.size() - 2) + " has no \"" + prefix + key + "\"");
  }

 private:
  std::string where_;
};

void validate_expected(const EntryChecker& c, const json& expected) {
  c.object(expected, "expected", "an object {metric: {\"value\": number, \"tolerance\": number or null}}");
  for (const auto& [metric, x] : expected.items()) {
    const std::string key = "expected." + metric;
    c.object(x, key, "an object {\"value\": number, \"tolerance\": number or null}");
    c.known_keys(x, key, {"value", "tolerance", "spread"});
    c.has(x, "value", key + ".");
    c.number(x["value"], key + ".value");
    if (x.contains("tolerance") && !x["tolerance"].is_null() &&
        (!x["tolerance"].is_number() || x["tolerance"].get<double>() < 0))
      c.fail(key + ".tolerance", "a number >= 0 or null", x["tolerance"]);
    if (!x.contains("spread")) continue;
    const auto& s = x["spread"];
    c.object(s, key + ".spread", "an object {\"seeds\", \"values\", \"budget_steps\"}");
    c.known_keys(s, key + ".spread", {"seeds", "values", "budget_steps"});
    for (const char* k : {"seeds", "values", "budget_steps"}) c.has(s, k, key + ".spread.");
    if (!s["seeds"].is_array()) c.fail(key + ".spread.seeds", "an array of integers", s["seeds"]);
    for (const auto& seed : s["seeds"])
      if (!seed.is_number_integer()) c.fail(key + ".spread.seeds", "an array of integers", s["seeds"]);
    if (!s["values"].is_array() || s["values"].size() != s["seeds"].size())
      c.fail(key + ".spread.values", "an array of numbers, one per seed", s["values"]);
    for (const auto& v : s["values"])
      if (!v.is_number()) c.fail(key + ".spread.values", "an array of numbers, one per seed", s["values"]);
    c.integer(s["budget_steps"], key + ".spread.budget_steps", 1, "a positive integer");
  }
}

void validate_entry(const std::string& path, const std::string& name, const json& e, const json& models) {
  const EntryChecker c(path, name);
  if (!e.is_object()) throw UserError(path + ": model '" + name + "' must be an object, got " + e.dump());
  for (const char* key : {"config", "data", "budget_steps", "seed", "threads"}) c.has(e, key);
  c.known_keys(e, "", {"config", "data", "budget_steps", "seed", "threads", "init_from", "evaluate", "embed_eval",
                       "export", "fingerprint", "expected", "cost"});
  c.string(e["config"], "config");
  c.object(e["data"], "data", "an object {\"dir\": string, \"files\": [string], \"command\": string}");
  c.known_keys(e["data"], "data", {"dir", "files", "command"});
  c.has(e["data"], "dir", "data.");
  c.string(e["data"]["dir"], "data.dir");
  if (e["data"].contains("files")) c.strings(e["data"]["files"], "data.files");
  if (e["data"].contains("command")) c.string(e["data"]["command"], "data.command");
  c.integer(e["budget_steps"], "budget_steps", 1, "a positive integer");
  c.integer(e["seed"], "seed", INT64_MIN, "an integer");
  c.integer(e["threads"], "threads", 1, "an integer >= 1");
  if (e.contains("evaluate")) c.strings(e["evaluate"], "evaluate");
  if (e.contains("embed_eval")) {
    c.object(e["embed_eval"], "embed_eval", "an object {\"analogy\": string, \"similarity\": string}");
    c.known_keys(e["embed_eval"], "embed_eval", {"analogy", "similarity"});
    for (const char* k : {"analogy", "similarity"}) {
      c.has(e["embed_eval"], k, "embed_eval.");
      c.string(e["embed_eval"][k], std::string("embed_eval.") + k);
    }
  }
  if (e.contains("export") && !e["export"].is_boolean()) c.fail("export", "true or false", e["export"]);
  if (e.contains("fingerprint")) {
    c.object(e["fingerprint"], "fingerprint", "an object {file: sha256 or null}");
    for (const auto& [file, sha] : e["fingerprint"].items())
      if (!sha.is_null() && !sha.is_string()) c.fail("fingerprint." + file, "a sha256 string or null", sha);
  }
  if (e.contains("expected")) validate_expected(c, e["expected"]);
  if (e.contains("cost")) {
    const auto& cost = e["cost"];
    c.object(cost, "cost", "an object {\"wall_s\", \"peak_rss_mb\", \"libtorch\"}");
    c.known_keys(cost, "cost", {"wall_s", "peak_rss_mb", "libtorch"});
    for (const char* k : {"wall_s", "peak_rss_mb"})
      if (cost.contains(k)) c.number(cost[k], std::string("cost.") + k);
    if (cost.contains("libtorch")) c.string(cost["libtorch"], "cost.libtorch");
  }
  if (e.contains("init_from")) {
    const auto& from = e["init_from"];
    if (!from.is_string() || !models.contains(from.get<std::string>()) || from.get<std::string>() == name)
      throw UserError(path + ": model '" + name + "': \"init_from\" must name another model of the manifest, got " +
                      from.dump());
    const auto& pre = models[from.get<std::string>()];
    if (pre.is_object() && pre.contains("init_from"))
      throw UserError(path + ": model '" + name + "': its init_from '" + from.get<std::string>() +
                      "' is itself fine-tuned; init_from names a pre-trained model");
  }
}

}  // namespace

void validate_manifest(const json& m, const std::string& path) {
  if (!m.is_object() || !m.contains("models") || !m["models"].is_object() || m["models"].empty())
    throw UserError(path + ": no \"models\" object");
  for (const auto& [key, value] : m.items())
    if (key != "models" && key != "about") throw UserError(path + ": unknown key \"" + key + "\" (known: about, models)");
  for (const auto& [name, e] : m["models"].items()) validate_entry(path, name, e, m["models"]);
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
  const auto config = entry["config"].get<std::string>();
  std::vector<std::string> files = {config};
  if (std::filesystem::is_regular_file(config)) {
    const auto chain = preset_chain(config);  // the deepest base first, the config last
    for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) files.push_back(it->path);
  }
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
