#pragma once
// checkpoints/MANIFEST.json, the reference models of the zoo: reading it, its schema, which
// models a command means, the order they train in, and the fingerprints (sha256) of the inputs
// their numbers depend on. The manifest stays a JSON document: `zoo check --update` writes the
// measured numbers back into it, for review in git.
//
// Schema (every model entry under "models"; "about" at the top is free text):
//   config        string, the INI file                                  (required)
//   data          {"dir": string (required), "files": [string], "command": string}   (required)
//   budget_steps  integer > 0                                           (required)
//   seed          integer                                               (required)
//   threads       integer >= 1                                          (required)
//   init_from     string: another model of the manifest, not itself fine-tuned
//   evaluate      [string]: extra flags of `nlpzoo evaluate`
//   embed_eval    {"analogy": string, "similarity": string}
//   export        boolean (default true)
//   fingerprint   {file: sha256 string or null (not measured yet)}
//   expected      {metric: {"value": number, "tolerance": number >= 0 or null,
//                           "spread": {"seeds": [integer], "values": [number], "budget_steps": integer > 0}}}
//   cost          {"wall_s": number, "peak_rss_mb": number, "libtorch": string}
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace nlpzoo::zoo {

using nlohmann::json;

/// Reads and validates the manifest at `path`. Throws UserError naming `path` when it is
/// missing, not JSON, or not of the schema above (validate_manifest).
json read_manifest(const std::string& path);

/// Throws UserError "<path>: model '<name>': \"<key>\" ..." naming the first entry and key (as
/// "expected.accuracy.tolerance" for a nested one) that is missing, unknown or of the wrong type,
/// or "<path>: ..." for the top level.
void validate_manifest(const json& manifest, const std::string& path);

/// `names` checked against the manifest (UserError "'<n>' is not a model of <path> (<known>)"),
/// or every model of it when `names` is empty.
std::vector<std::string> chosen_models(const json& manifest, const std::vector<std::string>& names,
                                       const std::string& path);

/// The models in training order: each one's init_from model (when it is asked for too) first,
/// the rest in the order given.
std::vector<std::string> training_order(const json& manifest, const std::vector<std::string>& names);

/// The files an entry's numbers depend on: its config, the presets it starts from (`base = ...`)
/// and its data files (data.dir/file).
std::vector<std::string> input_files(const json& entry);

/// The file's sha256 in hex. Throws UserError naming `path` when it cannot be computed.
std::string sha256_of_file(const std::string& path);

/// "" when every recorded fingerprint matches the files here; else what differs ("<file> is
/// missing", "<file> differs from the manifest's"). A fingerprint recorded as null (not
/// measured yet) is not compared.
std::string fingerprint_mismatch(const json& entry);

/// Where a model's trained copy lives: ROOT/NAME.
std::string copy_dir(const std::string& root, const std::string& name);

}  // namespace nlpzoo::zoo
