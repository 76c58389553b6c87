#include "datasets/bible.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <unordered_map>
#include <unordered_set>

#include "core/io.h"
#include "core/utf8.h"

namespace nlpzoo {

namespace {

constexpr const char* kInstallHint =
    "install it with: sudo apt-get install diatheke sword-text-web sword-text-kjv "
    "sword-text-sparv (or run scripts/setup.sh)";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The code point starting at s[i]; malformed bytes decode as themselves.
char32_t code_point_at(const std::string& s, size_t i) { return decode_utf8_at(s, i).value; }

char32_t last_code_point(const std::string& s) {
  if (s.empty()) return 0;
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80 && s.size() - i < 4) --i;
  return code_point_at(s, i);
}

// Letters and digits of the scripts these modules use (Latin with its accents, plus Greek,
// Cyrillic and Hebrew for good measure); quotes, dashes and other punctuation are not.
bool is_word_char(char32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) != 0;
  if (c >= 0xC0 && c <= 0x24F) return c != 0xD7 && c != 0xF7;
  return c >= 0x370 && c <= 0x1FFF;
}

bool ends_clause(char32_t c) {
  return c == ',' || c == ';' || c == ':' || c == '.' || c == '!' || c == '?';
}

// Appends the entity starting at s[i] ('&') and returns its length, or 0 if it is none.
size_t append_entity(const std::string& s, size_t i, std::string& out) {
  const size_t semi = s.find(';', i);
  if (semi == std::string::npos || semi - i > 10) return 0;
  const std::string name = s.substr(i + 1, semi - i - 1);
  static const std::unordered_map<std::string, char32_t> named = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}, {"nbsp", 0xA0}};
  char32_t c = 0;
  if (auto it = named.find(name); it != named.end()) {
    c = it->second;
  } else if (name.size() > 1 && name[0] == '#') {
    const bool hex = name[1] == 'x' || name[1] == 'X';
    const std::string digits = name.substr(hex ? 2 : 1);
    if (digits.empty() ||
        digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") !=
            std::string::npos)
      return 0;
    const unsigned long v = std::stoul(digits, nullptr, hex ? 16 : 10);
    if (v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    c = static_cast<char32_t>(v);
  } else {
    return 0;
  }
  append_utf8(out, c);
  return semi - i + 1;
}

struct Tag {
  std::string name;  // lowercased
  bool closing = false;
  bool self_closing = false;
  size_t end = 0;  // index of '>'
};

// Parses the tag at s[i] == '<'; false when there is no closing '>'.
bool parse_tag(const std::string& s, size_t i, Tag& tag) {
  const size_t gt = s.find('>', i);
  if (gt == std::string::npos) return false;
  size_t j = i + 1;
  tag.closing = j < gt && s[j] == '/';
  if (tag.closing) ++j;
  const size_t name_end = std::min(gt, s.find_first_of(" \t\r\n/", j));
  tag.name = s.substr(j, name_end - j);
  std::transform(tag.name.begin(), tag.name.end(), tag.name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  tag.self_closing = gt > i + 1 && s[gt - 1] == '/';
  tag.end = gt;
  return true;
}

// Tags that separate what comes before from what comes after (line, paragraph, verse
// boundaries); all others are inline and vanish without a trace.
bool is_block_tag(const std::string& name) {
  static const std::array<const char*, 14> block = {
      "milestone", "lb", "l", "lg", "p", "div", "br", "chapter", "verse", "item", "list",
      "row", "cell", "table"};
  return std::any_of(block.begin(), block.end(), [&](const char* b) { return name == b; });
}

// The English book names SWORD prints (locale "en"), deuterocanon included, so that a
// reference is recognised even when a leaked heading precedes it on the line.
const std::vector<std::string>& book_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {
        "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth",
        "I Samuel", "II Samuel", "I Kings", "II Kings", "I Chronicles", "II Chronicles", "Ezra",
        "Nehemiah", "Esther", "Job", "Psalms", "Proverbs", "Ecclesiastes", "Song of Solomon",
        "Isaiah", "Jeremiah", "Lamentations", "Ezekiel", "Daniel", "Hosea", "Joel", "Amos",
        "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk", "Zephaniah", "Haggai", "Zechariah",
        "Malachi", "Matthew", "Mark", "Luke", "John", "Acts", "Romans", "I Corinthians",
        "II Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians",
        "I Thessalonians", "II Thessalonians", "I Timothy", "II Timothy", "Titus", "Philemon",
        "Hebrews", "James", "I Peter", "II Peter", "I John", "II John", "III John", "Jude",
        "Revelation of John",
        // Deuterocanon (the WEB module has it).
        "Tobit", "Judith", "Esther (Greek)", "Wisdom", "Sirach", "Baruch", "Prayer of Azariah",
        "Susanna", "Bel and the Dragon", "I Maccabees", "II Maccabees", "III Maccabees",
        "IV Maccabees", "I Esdras", "II Esdras", "Prayer of Manasses", "Additional Psalm",
        "Letter of Jeremiah"};
    // Longest first, so "I John 1:1" is not read as "John 1:1".
    std::stable_sort(v.begin(), v.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    return v;
  }();
  return names;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Finds the first "Book C:V:" in `line` (followed by a space or the end of the line).
// On success sets `reference` ("Book C:V") and `text_start` (the index after ": ").
bool find_reference(const std::string& line, std::string& reference, size_t& text_start) {
  for (size_t p = 1; p < line.size(); ++p) {
    if (!is_digit(line[p]) || line[p - 1] != ' ') continue;
    size_t q = p;
    while (q < line.size() && is_digit(line[q])) ++q;
    if (q >= line.size() || line[q] != ':') continue;
    size_t r = q + 1;
    while (r < line.size() && is_digit(line[r])) ++r;
    if (r == q + 1 || r >= line.size() || line[r] != ':') continue;
    if (r + 1 < line.size() && line[r + 1] != ' ') continue;
    for (const auto& book : book_names()) {
      if (book.size() + 1 > p) continue;
      const size_t start = p - 1 - book.size();
      if (line.compare(start, book.size(), book) != 0) continue;
      if (start > 0 && !is_space(line[start - 1]) && line[start - 1] != '>') continue;
      reference = line.substr(start, r - start);
      text_start = std::min(line.size(), r + 2);
      return true;
    }
  }
  return false;
}

bool executable_on_path(const std::string& program, std::string& found) {
  if (program.find('/') != std::string::npos) {
    found = program;
    return access(program.c_str(), X_OK) == 0;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (size_t s = 0, e; s <= dirs.size(); s = e + 1) {
    e = dirs.find(':', s);
    if (e == std::string::npos) e = dirs.size();
    const std::string candidate = (e > s ? dirs.substr(s, e - s) : ".") + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) {
      found = candidate;
      return true;
    }
  }
  return false;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string package_of(const std::string& module) {
  if (module == "engWEB2015eb") return "sword-text-web";
  if (module == "engKJV2006eb") return "sword-text-kjv";
  if (module == "spaRV1909eb") return "sword-text-sparv";
  return "the SWORD package providing " + module;
}

// "Book C" of a "Book C:V" reference (the reference itself if it has no ':').
std::string chapter_of(const std::string& reference) {
  return reference.substr(0, reference.rfind(':'));
}

std::string join_lines(const std::vector<std::string>& lines) {
  size_t total = 0;
  for (const auto& l : lines) total += l.size() + 1;
  std::string out;
  out.reserve(total);
  for (const auto& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}

}  // namespace

std::string strip_osis_markup(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  // After a </w>, text glued to it and to the next <w> on both sides ("</w>es<w>") is a
  // word the module forgot to space; glued_from is where that text starts in `out`.
  bool glued_open = false;
  size_t glued_from = 0;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '<') {
      Tag tag;
      if (parse_tag(s, i, tag)) {
        if (!tag.closing && !tag.self_closing && (tag.name == "note" || tag.name == "title")) {
          // Skip to the matching end tag; notes may nest.
          int depth = 1;
          size_t pos = tag.end + 1;
          while (depth > 0) {
            const size_t lt = s.find('<', pos);
            Tag inner;
            if (lt == std::string::npos || !parse_tag(s, lt, inner)) {
              pos = s.size();
              break;
            }
            if (inner.name == tag.name) {
              if (inner.closing) --depth;
              else if (!inner.self_closing) ++depth;
            }
            pos = inner.end + 1;
          }
          // A title stands apart from the text around it; a note marker sits on a word.
          if (tag.name == "title") out += ' ';
          glued_open = false;
          i = pos;
          continue;
        }
        if (tag.name == "w" && !tag.closing) {
          if (glued_open && glued_from < out.size() &&
              is_word_char(code_point_at(out, glued_from)) && is_word_char(last_code_point(out)))
            out.insert(glued_from, 1, ' ');
          glued_open = false;
          const char32_t prev = last_code_point(out);
          if (is_word_char(prev) || ends_clause(prev)) out += ' ';
        } else if (tag.name == "w" && tag.closing) {
          glued_open = true;
          glued_from = out.size();
        } else if (is_block_tag(tag.name)) {
          out += ' ';
          glued_open = false;
        }
        i = tag.end + 1;
        continue;
      }
    }
    if (c == '&') {
      if (const size_t n = append_entity(s, i, out); n > 0) {
        i += n;
        continue;
      }
    }
    // U+00B6 PILCROW SIGN: the KJV's paragraph marks are layout, not words.
    if (static_cast<unsigned char>(c) == 0xC2 && i + 1 < s.size() &&
        static_cast<unsigned char>(s[i + 1]) == 0xB6) {
      i += 2;
      continue;
    }
    out += c;
    ++i;
  }

  // Collapse whitespace (no-break spaces included) to single spaces and trim.
  std::string norm;
  norm.reserve(out.size());
  bool pending_space = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool nbsp = static_cast<unsigned char>(out[i]) == 0xC2 && i + 1 < out.size() &&
                      static_cast<unsigned char>(out[i + 1]) == 0xA0;
    if (is_space(out[i]) || nbsp) {
      pending_space = true;
      if (nbsp) ++i;
      continue;
    }
    if (pending_space && !norm.empty()) norm += ' ';
    pending_space = false;
    norm += out[i];
  }
  return norm;
}

std::vector<Verse> parse_diatheke_osis(const std::string& output) {
  std::vector<std::string> lines;
  for (size_t s = 0, e; s < output.size(); s = e + 1) {
    e = output.find('\n', s);
    if (e == std::string::npos) e = output.size();
    std::string line = output.substr(s, e - s);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string::npos)
    lines.pop_back();
  std::string reference;
  size_t text_start = 0;
  // diatheke ends its output with "(moduleName)".
  if (!lines.empty() && lines.back().size() > 2 && lines.back().front() == '(' &&
      lines.back().back() == ')' && !find_reference(lines.back(), reference, text_start))
    lines.pop_back();

  std::vector<Verse> raw;
  for (const auto& line : lines) {
    if (find_reference(line, reference, text_start)) {
      raw.push_back({reference, line.substr(text_start)});
    } else if (!raw.empty()) {
      raw.back().text += "\n" + line;
    }
  }
  for (auto& v : raw) {
    // The WEB module appends its whole glossary to Revelation 22:21 after a run of twelve
    // spaces; no verse of the three modules has a run of even eight, so cut there.
    if (const size_t cut = v.text.find("        "); cut != std::string::npos) v.text.resize(cut);
    v.text = strip_osis_markup(v.text);
  }
  return raw;
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

BibleSplit bible_split_of(const std::string& reference) {
  const uint64_t bucket = fnv1a64(reference) % 1000;
  if (bucket < 32) return BibleSplit::kTest;
  if (bucket < 64) return BibleSplit::kValid;
  return BibleSplit::kTrain;
}

const char* bible_split_name(BibleSplit split) {
  switch (split) {
    case BibleSplit::kTrain: return "train";
    case BibleSplit::kValid: return "valid";
    case BibleSplit::kTest: return "test";
  }
  return "train";
}

std::vector<Verse> export_sword_module(const std::string& module) {
  const char* env = std::getenv("NLPZOO_DIATHEKE");
  const std::string program = env != nullptr && *env != '\0' ? env : "diatheke";
  std::string path;
  if (!executable_on_path(program, path))
    throw UserError("diatheke not found (" + program + "): " + kInstallHint);
  const std::string cmd = shell_quote(path) + " -b " + shell_quote(module) +
                          " -f osis -l en -k 'Genesis 1:1-Revelation 22:21' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw UserError("cannot run " + path + ": " + kInstallHint);
  std::string output;
  char buf[1 << 16];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw UserError(path + " -b " + module + " failed (status " + std::to_string(status) +
                    "): " + kInstallHint);
  auto verses = parse_diatheke_osis(output);
  const bool any_text = std::any_of(verses.begin(), verses.end(),
                                    [](const Verse& v) { return !v.text.empty(); });
  if (!any_text)
    throw UserError("SWORD module " + module + " exported no verses (is it installed? " +
                    "sudo apt-get install " + package_of(module) + "; or " + kInstallHint + ")");
  return verses;
}

VersePairs align_verses(const std::vector<Verse>& src, const std::vector<Verse>& tgt) {
  std::unordered_map<std::string, const std::string*> tgt_text;
  for (const auto& v : tgt) tgt_text.emplace(v.reference, &v.text);
  const auto target_of = [&](const std::string& ref) -> const std::string* {
    const auto it = tgt_text.find(ref);
    return it == tgt_text.end() ? nullptr : it->second;
  };

  std::unordered_set<std::string> renumbered;  // "Book C" of chapters to drop
  for (const auto& v : src) {
    const std::string* t = target_of(v.reference);
    if (!v.text.empty() || t == nullptr || t->empty()) continue;
    const std::string chapter = chapter_of(v.reference);
    const size_t space = chapter.rfind(' ');
    renumbered.insert(chapter);
    renumbered.insert(chapter.substr(0, space + 1) +
                      std::to_string(std::stol(chapter.substr(space + 1)) + 1));
  }

  VersePairs pairs;
  for (const auto& v : src) {
    const std::string* t = target_of(v.reference);
    if (v.text.empty() || t == nullptr || t->empty()) {
      ++pairs.dropped_empty;
    } else if (renumbered.count(chapter_of(v.reference)) != 0) {
      ++pairs.dropped_renumbered;
    } else {
      pairs.references.push_back(v.reference);
      pairs.src.push_back(v.text);
      pairs.tgt.push_back(*t);
    }
  }
  return pairs;
}

BibleExportSummary export_bible(const std::string& out_dir) {
  const auto t0 = std::chrono::steady_clock::now();
  // diatheke is single-threaded and takes seconds per module: run the three together.
  auto web_f = std::async(std::launch::async, export_sword_module, std::string("engWEB2015eb"));
  auto kjv_f = std::async(std::launch::async, export_sword_module, std::string("engKJV2006eb"));
  auto rv_f = std::async(std::launch::async, export_sword_module, std::string("spaRV1909eb"));
  const auto web = web_f.get();
  const auto kjv = kjv_f.get();
  const auto rv = rv_f.get();

  const VersePairs pairs = align_verses(rv, web);
  BibleExportSummary summary;
  summary.dropped_empty = pairs.dropped_empty;
  summary.dropped_renumbered = pairs.dropped_renumbered;
  std::array<std::vector<std::string>, 3> es, en;  // indexed by BibleSplit
  for (size_t i = 0; i < pairs.references.size(); ++i) {
    const auto split = static_cast<size_t>(bible_split_of(pairs.references[i]));
    es[split].push_back(pairs.src[i]);
    en[split].push_back(pairs.tgt[i]);
  }
  std::vector<std::string> english;
  for (const auto* verses : {&web, &kjv})
    for (const auto& v : *verses)
      if (!v.text.empty()) english.push_back(v.text);

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw UserError(out_dir + ": cannot create directory (" + ec.message() + ")");
  for (const auto split : {BibleSplit::kTrain, BibleSplit::kValid, BibleSplit::kTest}) {
    const auto k = static_cast<size_t>(split);
    const std::string base = out_dir + "/" + bible_split_name(split);
    atomic_write_text(base + ".es", join_lines(es[k]));
    atomic_write_text(base + ".en", join_lines(en[k]));
  }
  atomic_write_text(out_dir + "/english.txt", join_lines(english));

  summary.train = es[static_cast<size_t>(BibleSplit::kTrain)].size();
  summary.valid = es[static_cast<size_t>(BibleSplit::kValid)].size();
  summary.test = es[static_cast<size_t>(BibleSplit::kTest)].size();
  summary.english = english.size();
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace nlpzoo
