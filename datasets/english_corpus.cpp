#include "datasets/english_corpus.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "datasets/bible.h"
#include "datasets/brown_corpus.h"
#include "core/io.h"
#include "core/utf8.h"

namespace nlpzoo {

namespace {

constexpr size_t npos = std::string::npos;

constexpr const char* kGcideHint =
    "the GCIDE dictionary; install it with: sudo apt-get install dict-gcide "
    "(or run scripts/setup.sh)";
constexpr const char* kWordnetHint =
    "WordNet's data files; install them with: sudo apt-get install wordnet-base "
    "(or run scripts/setup.sh)";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }

// The code point at s[i] and its length in bytes; a malformed sequence reads as U+FFFD
// (a separator) of length 1.
char32_t decode_utf8(const std::string& s, size_t i, size_t& len) {
  const Utf8CodePoint u = decode_utf8_at(s, i);
  len = u.length;
  return u.valid ? u.value : 0xFFFD;
}

// Latin-1 letters U+00C0..U+00FF folded to lowercase ASCII (nullptr: × and ÷).
constexpr std::array<const char*, 64> kLatin1 = {
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    "d", "n", "o", "o", "o", "o", "o", nullptr, "o", "u", "u", "u", "u", "y", "th", "ss",
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    "d", "n", "o", "o", "o", "o", "o", nullptr, "o", "u", "u", "u", "u", "y", "th", "y"};

// Latin Extended-A, U+0100..U+017F, one base letter per code point ('1': "ij", '2': "oe").
constexpr char kLatinExtA[] =
    "aaaaaa" "cccccccc" "dddd" "eeeeeeeeee" "gggggggg" "hhhh" "iiiiiiiiii" "11" "jj" "kkk"
    "llllllllll" "nnnnnnnnn" "oooooo" "22" "rrrrrr" "ssssssss" "tttttt" "uuuuuuuuuuuu" "ww"
    "yyy" "zzzzzz" "s";
static_assert(sizeof kLatinExtA - 1 == 0x80, "one letter per code point of U+0100..U+017F");

// Appends the lowercase ASCII spelling of a word character; false for anything else.
bool append_folded(char32_t c, std::string& out) {
  if (c < 0x80) {
    const char a = static_cast<char>(c);
    if (is_upper(a)) out += static_cast<char>(a - 'A' + 'a');
    else if (is_lower(a) || is_digit(a)) out += a;
    else return false;
    return true;
  }
  if (c >= 0xC0 && c <= 0xFF) {
    const char* f = kLatin1[c - 0xC0];
    if (f == nullptr) return false;
    out += f;
    return true;
  }
  if (c >= 0x100 && c <= 0x17F) {
    const char f = kLatinExtA[c - 0x100];
    out += f == '1' ? "ij" : f == '2' ? "oe" : std::string(1, f);
    return true;
  }
  return false;
}

bool is_apostrophe(char32_t c) { return c == '\'' || c == 0x2019 || c == 0x2018 || c == 0x02BC; }

bool is_word_code_point(char32_t c) {
  std::string scratch;
  return append_folded(c, scratch);
}

std::string trim(const std::string& s, const char* chars = " \t\r\n") {
  const size_t b = s.find_first_not_of(chars);
  if (b == npos) return "";
  const size_t e = s.find_last_not_of(chars);
  return s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// ---- GCIDE entities ----

const std::unordered_map<std::string, std::string>& named_entities() {
  static const std::unordered_map<std::string, std::string> table = [] {
    std::unordered_map<std::string, std::string> t = {
        {"ae", "ae"},     {"AE", "AE"},      {"oe", "oe"},      {"OE", "OE"},
        {"aum", "a"},     {"add", "a"},      {"udd", "u"},      {"asl", "a"},
        {"als", "a"},     {"imac", "i"},     {"ng", "ng"},      {"th", "th"},
        {"eth", "th"},    {"thorn", "th"},   {"yogh", "y"},     {"ccaron", "c"},
        {"cacute", "c"},  {"schwa", "e"},    {"filig", "fi"},   {"fllig", "fl"},
        {"ffllig", "ffl"}, {"rsquo", "'"},   {"lsquo", "'"},    {"deg", " degrees "}};
    for (const char* g : {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
                          "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho",
                          "sigma", "sigmat", "tau", "upsilon", "phi", "chi", "psi", "omega",
                          "digamma"}) {
      const std::string name = g;
      const std::string spoken = " " + (name == "sigmat" ? std::string("sigma") : name) + " ";
      t.emplace(name, spoken);
      t.emplace(std::string(1, static_cast<char>(name[0] - 'a' + 'A')) + name.substr(1), spoken);
    }
    return t;
  }();
  return table;
}

// The replacement of entity `name` (the text between the brackets); false if it is none.
bool entity_text(const std::string& name, std::string& replacement) {
  static const std::string marks = "^'`=.~-\",*";
  const auto all_alpha = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_alpha(c); });
  };
  if (name.size() >= 2 && name.size() <= 3) {
    // A diacritic before its letter(s): ['e] [=a] [.a] [~n] [,c] [=ae] [^o].
    if (marks.find(name[0]) != npos && all_alpha(name.substr(1))) {
      replacement = name.substr(1);
      return true;
    }
    // A breve or circumflex after them: [a^] [oo^].
    if (name.back() == '^' && all_alpha(name.substr(0, name.size() - 1))) {
      replacement = name.substr(0, name.size() - 1);
      return true;
    }
  }
  const auto& table = named_entities();
  if (const auto it = table.find(name); it != table.end()) {
    replacement = it->second;
    return true;
  }
  return false;
}

// ---- GCIDE entry structure ----

// Index of the '\n' ending the line that holds s[i], or s.size().
size_t line_end(const std::string& s, size_t i) {
  const size_t e = s.find('\n', i);
  return e == npos ? s.size() : e;
}

// Index just after the group opening at s[i] ('(', '[' or '{'), counting nested groups of
// the same kind; s.size() when it never closes.
size_t skip_group(const std::string& s, size_t i) {
  const char open = s[i];
  const char close = open == '(' ? ')' : open == '[' ? ']' : '}';
  int depth = 0;
  for (size_t k = i; k < s.size(); ++k) {
    if (s[k] == open) ++depth;
    else if (s[k] == close && --depth == 0) return k + 1;
  }
  return s.size();
}

// Words of an entry's header after its headwords: grammar abbreviations ("n.", "v.",
// "pl.", "imp.", "L.", "1."), "&" and "or".
bool is_header_word(const std::string& w) {
  if (w == "&" || w == "or") return true;
  return w.size() >= 2 && w.size() <= 7 && w.back() == '.' && w[0] != '"';
}

// Drops every [bracketed] group (nested ones included), keeping the line breaks inside it
// so that a source line such as "[1913 Webster]" becomes a blank line. A group that opens
// its line and is followed on that line by one lone word drops that word too (dictd's
// conversion leaks the next headword there: "[1913 Webster] Boyar"); followed by more
// text, it ends the paragraph before that text ("[1913 Webster] This letter, in ...").
std::string drop_bracket_groups(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s[i] == ']') {
      ++i;
      continue;
    }
    if (s[i] != '[') {
      out += s[i++];
      continue;
    }
    const size_t line_start = out.rfind('\n') == npos ? 0 : out.rfind('\n') + 1;
    const bool opens_line = out.find_first_not_of(" \t", line_start) == npos;
    int depth = 0;
    size_t k = i;
    for (; k < s.size(); ++k) {
      if (s[k] == '[') ++depth;
      else if (s[k] == ']' && --depth == 0) break;
      else if (s[k] == '\n') out += '\n';
    }
    i = std::min(k + 1, s.size());
    if (opens_line) {
      const size_t e = line_end(s, i);
      const std::string rest = trim(s.substr(i, e - i));
      if (!rest.empty() && rest.find_first_of(" \t") == npos &&
          std::all_of(rest.begin(), rest.end(),
                      [](char c) { return is_alpha(c) || c == '-' || c == '\''; }))
        i = e;
      else if (!rest.empty())
        out += '\n';  // a source ends its paragraph: what follows it starts the next
    }
  }
  return out;
}

// Drops \pro*nun"ci*a`tion\ groups of one line (and a lone backslash).
std::string drop_pronunciations(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      out += line[i];
      continue;
    }
    const size_t e = line.find('\\', i + 1);
    if (e == npos) continue;
    out += ' ';
    i = e;
  }
  return out;
}

// "Bot.", "Law", "&": the words of a subject label such as "(Anc. Astron.)".
bool is_label_word(const std::string& w) {
  if (w == "&") return true;
  const size_t letters = w.back() == '.' ? w.size() - 1 : w.size();
  return letters >= 1 && is_upper(w[0]) &&
         std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(letters),
                     [](char c) { return is_alpha(c); });
}

// Drops parenthesised subject labels, capitalised words at least one of which is
// abbreviated ("(Bot.)", "(Anc. Astron.)", "(Mar. Law)"), sense letters ("(a)", "(2)") and
// pronunciations ("(-d?k\"sh?n)"); other parentheses stay.
std::string drop_paren_labels(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') {
      const size_t e = s.find_first_of("()", i + 1);
      if (e != npos && s[e] == ')') {
        const std::string inner = trim(s.substr(i + 1, e - i - 1));
        bool label = !inner.empty();
        if (inner.find(' ') == npos && inner.find_first_of("?*\"`") != npos) {
          // a pronunciation: "(-d?k\"sh?n)"
        } else if (inner.size() <= 2) {
          label = label && std::all_of(inner.begin(), inner.end(), [](char c) { return is_alnum(c); });
        } else {
          bool abbreviated = false;
          for (size_t p = 0; label && p < inner.size();) {
            const size_t q = std::min(inner.find(' ', p), inner.size());
            if (q > p) {
              label = is_label_word(inner.substr(p, q - p));
              abbreviated = abbreviated || inner[q - 1] == '.';
            }
            p = q + 1;
          }
          label = label && abbreviated;
        }
        if (label) {
          out += ' ';
          i = e;
          continue;
        }
      }
    }
    out += s[i];
  }
  return out;
}

size_t token_end(const std::string& s, size_t i) {
  while (i < s.size() && !is_space(s[i])) ++i;
  return i;
}

// A word that may continue a citation: "W.", "Scott.", "iii.", "3.", "Prov.".
bool is_citation_word(const std::string& w) {
  if (w.empty() || w[0] == '"' || w[0] == '-' || w[0] == '(') return false;
  return is_upper(w[0]) || is_digit(w[0]) || w.back() == '.' || w.back() == ',' ||
         w.back() == ';' || w.back() == ':';
}

// Drops attributions from one line: "--" glued to a capitalised name, and up to six words
// after it that look like the rest of a citation ("--Sir W. Scott.", "--Prov. iii. 3.").
std::string drop_attributions(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    if (line.compare(i, 2, "--") == 0 && i + 2 < line.size() && is_upper(line[i + 2])) {
      size_t j = token_end(line, i);
      for (int extra = 0; extra < 6; ++extra) {
        size_t k = j;
        while (k < line.size() && is_space(line[k])) ++k;
        if (k >= line.size()) break;
        const size_t e = token_end(line, k);
        if (!is_citation_word(line.substr(k, e - k))) break;
        j = e;
      }
      out += ' ';
      i = j;
      continue;
    }
    out += line[i++];
  }
  return out;
}

// Joins words that carry Webster's stress and syllable marks between letters, as run-on
// derivatives do ("{Sub*scrip\"tive*ly}" -> "{Subscriptively}").
std::string drop_syllable_marks(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '*' || c == '"' || c == '`') && i > 0 && i + 1 < s.size() && is_alpha(s[i - 1]) &&
        is_alpha(s[i + 1]))
      continue;
    out += c;
  }
  return out;
}

// Drops the part of speech of run-on derivatives and senses: "-- n. A native",
// "-- {Subscriptively}, adv.", "-- {Reintroduction}, n." (grammar abbreviations after
// "--" or a {cross reference}, punctuation between them ignored).
std::string drop_run_on_grammar(const std::string& s) {
  static const std::array<const char*, 14> grammar = {
      "n.", "a.", "adj.", "adv.", "v.", "t.", "i.", "pl.", "p.", "pr.", "imp.", "vb.", "prep.",
      "conj."};
  std::string out;
  bool after_marker = false;
  for (size_t p = 0; p < s.size();) {
    while (p < s.size() && is_space(s[p])) ++p;
    if (p >= s.size()) break;
    const size_t e = token_end(s, p);
    const std::string token = s.substr(p, e - p);
    p = e;
    const std::string bare = trim(token, ",;");
    if (after_marker && (bare.empty() || std::any_of(grammar.begin(), grammar.end(),
                                                     [&](const char* g) { return bare == g; })))
      continue;
    after_marker = token == "--" || (!bare.empty() && bare.back() == '}');
    if (!out.empty()) out += ' ';
    out += token;
  }
  return out;
}

// Removes leading sense numbers ("1.", "2"), the labels "Syn:", "Syn.", "Note:", "Usage:"
// and dashes.
std::string drop_leading_markers(const std::string& s) {
  size_t p = 0;
  while (true) {
    while (p < s.size() && is_space(s[p])) ++p;
    const size_t e = token_end(s, p);
    const std::string w = s.substr(p, e - p);
    const bool number = !w.empty() && w.size() <= 4 &&
                        std::all_of(w.begin(), w.end(), [](char c) { return is_digit(c) || c == '.'; });
    if (w.empty() || !(number || w == "Syn:" || w == "Syn." || w == "Note:" || w == "Usage:" || w == "--")) break;
    p = e;
  }
  return s.substr(p);
}

}  // namespace

std::string normalize_words(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::string word;
  const auto flush = [&] {
    if (word.empty()) return;
    if (!out.empty()) out += ' ';
    out += word;
    word.clear();
  };
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    const char32_t c = decode_utf8(text, i, len);
    i += len;
    if (append_folded(c, word)) continue;
    if (is_apostrophe(c) && !word.empty() && i < text.size()) {
      size_t next_len = 1;
      if (is_word_code_point(decode_utf8(text, i, next_len))) {
        word += '\'';
        continue;
      }
    }
    flush();
  }
  flush();
  return out;
}

std::string map_gcide_entities(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::string replacement;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '[') {
      const size_t close = text.find_first_of("[]\n ", i + 1);
      if (close != npos && text[close] == ']' && close - i - 1 <= 10 &&
          entity_text(text.substr(i + 1, close - i - 1), replacement)) {
        out += replacement;
        i = close + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::vector<std::string> gcide_entry_lines(const std::string& entry) {
  const std::string t = map_gcide_entities(entry);

  // The header line: the first that starts in column 0.
  size_t h = 0;
  while (h < t.size()) {
    const size_t e = line_end(t, h);
    if (e > h && !is_space(t[h])) break;
    h = e + 1;
  }
  if (h >= t.size() || t.compare(h, 3, "00-") == 0) return {};

  // Headwords: the text before each \pronunciation\ of the header line.
  const size_t header_end = line_end(t, h);
  std::vector<std::string> headwords;
  size_t pos = h;
  while (true) {
    const size_t b1 = t.find('\\', pos);
    if (b1 == npos || b1 >= header_end) break;
    const size_t b2 = t.find('\\', b1 + 1);
    if (b2 == npos || b2 >= header_end) break;
    const std::string word = trim(t.substr(pos, b1 - pos), " \t,;");
    if (word.find_first_of("([{;") != npos) break;
    if (!word.empty()) headwords.push_back(word);
    pos = b2 + 1;
  }

  // The rest of the header: grammar, inflections, pronunciations, etymology, labels.
  while (pos < t.size()) {
    const char c = t[pos];
    if (is_space(c) || c == ',' || c == ';' || c == ':' || c == '.' || c == '&') {
      ++pos;
    } else if (c == '(' || c == '[' || c == '{') {
      pos = skip_group(t, pos);
    } else if (c == '\\') {
      const size_t e = t.find('\\', pos + 1);
      pos = e == npos ? t.size() : e + 1;
    } else {
      // Another headword whose pronunciation follows, after a group that stopped the loop
      // above: "Relevance \\Rel"e*vance\\ (r?l"?*vans), Relevancy \\Rel"e*van*cy\\".
      const size_t backslash = t.find('\\', pos);
      if (backslash != npos && backslash < line_end(t, pos)) {
        const std::string word = trim(t.substr(pos, backslash - pos), " \t,;");
        if (!word.empty() && word.find_first_of("([{;.") == npos) {
          headwords.push_back(word);
          pos = backslash;
          continue;
        }
      }
      size_t e = pos;
      while (e < t.size() && !is_space(t[e]) && std::strchr("([{\\", t[e]) == nullptr) ++e;
      const std::string w = trim(t.substr(pos, e - pos), ",;:");
      if (!is_header_word(w)) break;
      pos = e;
    }
  }

  // The body, as paragraphs separated by blank lines (source lines become blank).
  struct Paragraph {
    std::string text;
    bool quotation = false;
  };
  std::vector<Paragraph> paragraphs;
  const std::string body = drop_bracket_groups(t.substr(pos));
  bool open = false;
  for (size_t s = 0; s <= body.size();) {
    const size_t e = line_end(body, s);
    const std::string line = drop_pronunciations(body.substr(s, e - s));
    s = e + 1;
    const size_t indent = line.find_first_not_of(" \t");
    if (indent == npos) {
      open = false;
      continue;
    }
    if (indent >= 30) continue;  // a citation's continuation, right-aligned
    if (!open) {
      paragraphs.push_back({"", !paragraphs.empty() && indent >= 8});
      open = true;
    }
    paragraphs.back().text += drop_attributions(line) + "\n";
  }

  const std::string head = headwords.empty() ? "" : normalize_words(headwords.front());
  std::vector<std::string> lines;
  for (const auto& p : paragraphs) {
    const std::string text = drop_leading_markers(
        drop_run_on_grammar(drop_paren_labels(drop_syllable_marks(p.text))));
    const std::string words = normalize_words(text);
    if (words.empty()) continue;
    const bool sub_entry = trim(text).rfind('{', 0) == 0;
    if (p.quotation || sub_entry || head.empty() || words == head || starts_with(words, head + " "))
      lines.push_back(words);
    else
      lines.push_back(head + " " + words);
  }
  return lines;
}

int64_t decode_dictd_number(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (text.empty() || text.size() > 10) return -1;
  int64_t v = 0;
  for (const char c : text) {
    const size_t d = alphabet.find(c);
    if (d == npos) return -1;
    v = v * 64 + static_cast<int64_t>(d);
  }
  return v;
}

std::vector<DictdSpan> parse_dictd_index(const std::string& index) {
  std::vector<DictdSpan> spans;
  for (size_t s = 0; s < index.size();) {
    const size_t e = line_end(index, s);
    std::string line = index.substr(s, e - s);
    s = e + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t t2 = line.rfind('\t');
    if (t2 == npos || t2 == 0) continue;
    const size_t t1 = line.rfind('\t', t2 - 1);
    if (t1 == npos) continue;
    const int64_t offset = decode_dictd_number(line.substr(t1 + 1, t2 - t1 - 1));
    const int64_t length = decode_dictd_number(line.substr(t2 + 1));
    if (offset < 0 || length < 0) continue;
    spans.push_back({static_cast<uint64_t>(offset), static_cast<uint64_t>(length)});
  }
  std::sort(spans.begin(), spans.end(), [](const DictdSpan& a, const DictdSpan& b) {
    return std::make_pair(a.offset, a.length) < std::make_pair(b.offset, b.length);
  });
  spans.erase(std::unique(spans.begin(), spans.end(),
                          [](const DictdSpan& a, const DictdSpan& b) {
                            return a.offset == b.offset && a.length == b.length;
                          }),
              spans.end());
  return spans;
}

std::vector<std::string> gcide_lines(const std::string& dict, const std::string& index) {
  std::vector<std::string> lines;
  for (const auto& span : parse_dictd_index(index)) {
    if (span.offset > dict.size() || span.length > dict.size() - span.offset) continue;
    for (auto& l : gcide_entry_lines(dict.substr(span.offset, span.length)))
      lines.push_back(std::move(l));
  }
  return lines;
}

std::vector<std::string> wordnet_gloss_lines(const std::string& data_file) {
  std::vector<std::string> lines;
  for (size_t s = 0; s < data_file.size();) {
    const size_t e = line_end(data_file, s);
    const std::string line = data_file.substr(s, e - s);
    s = e + 1;
    if (line.empty() || line[0] == ' ') continue;  // the licence header
    const size_t bar = line.find(" | ");
    if (bar == npos) continue;
    // synset_offset lex_filenum ss_type w_cnt (hex) [word lex_id]...
    std::vector<std::string> fields;
    for (size_t p = 0; p < bar;) {
      const size_t q = std::min(line.find(' ', p), bar);
      if (q > p) fields.push_back(line.substr(p, q - p));
      p = q + 1;
    }
    if (fields.size() < 4) continue;
    const unsigned long count = std::strtoul(fields[3].c_str(), nullptr, 16);
    std::string text;
    for (unsigned long w = 0; w < count && 4 + 2 * w < fields.size(); ++w) {
      std::string word = fields[4 + 2 * w];
      if (const size_t paren = word.find('('); paren != npos) word.resize(paren);  // "galore(ip)"
      std::replace(word.begin(), word.end(), '_', ' ');
      text += word + ", ";
    }
    text += line.substr(bar + 3);
    std::string words = normalize_words(text);
    if (!words.empty()) lines.push_back(std::move(words));
  }
  return lines;
}

std::string read_gzip_file(const std::string& path) {
  require_file(path, "gzip file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw UserError(path + ": cannot open for reading");
  std::string out;
  std::array<char, 1 << 16> buf;
  int n = 0;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    out.append(buf.data(), static_cast<size_t>(n));
  int code = Z_OK;
  const std::string message = n < 0 ? gzerror(f, &code) : "";
  const int closed = gzclose(f);
  if (n < 0) throw UserError(path + ": corrupt gzip data (" + message + ")");
  if (closed != Z_OK) throw UserError(path + ": truncated or corrupt gzip data");
  return out;
}

std::string build_english_corpus(const EnglishCorpusOptions& options, EnglishCorpusSummary& summary) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dict_path = options.gcide_dir + "/gcide.dict.dz";
  const std::string index_path = options.gcide_dir + "/gcide.index";
  require_file(dict_path, kGcideHint);
  require_file(index_path, kGcideHint);
  std::vector<std::string> wordnet_paths;
  if (options.wordnet)
    for (const char* pos : {"noun", "verb", "adj", "adv"}) {
      wordnet_paths.push_back(options.wordnet_dir + "/data." + pos);
      require_file(wordnet_paths.back(), kWordnetHint);
    }

  // diatheke takes seconds per module and GCIDE a few more: all three at once.
  auto web_f = std::async(std::launch::async, export_sword_module, std::string("engWEB2015eb"));
  auto kjv_f = std::async(std::launch::async, export_sword_module, std::string("engKJV2006eb"));
  auto gcide_f = std::async(std::launch::async, [&] {
    return gcide_lines(read_gzip_file(dict_path), read_file(index_path));
  });
  std::vector<std::string> wordnet;
  for (const auto& path : wordnet_paths)
    for (auto& l : wordnet_gloss_lines(read_file(path))) wordnet.push_back(std::move(l));
  const auto verse_lines = [](const std::vector<Verse>& verses) {
    std::vector<std::string> lines;
    for (const auto& v : verses)
      if (std::string words = normalize_words(v.text); !words.empty())
        lines.push_back(std::move(words));
    return lines;
  };
  const std::vector<std::string> web = verse_lines(web_f.get());
  const std::vector<std::string> kjv = verse_lines(kjv_f.get());
  const std::vector<std::string> gcide = gcide_f.get();

  std::vector<std::pair<std::string, const std::vector<std::string>*>> sources = {
      {"bible-web", &web}, {"bible-kjv", &kjv}, {"gcide", &gcide}};
  if (options.wordnet) sources.emplace_back("wordnet", &wordnet);
  // After the others, so that the corpus without Brown is a prefix of the corpus with it.
  const auto brown = options.brown_dir.empty() ? std::vector<BrownGenre>{} : read_brown_corpus(options.brown_dir);
  for (const auto& g : brown) sources.emplace_back("brown-" + g.genre, &g.lines);

  summary = EnglishCorpusSummary{};
  size_t bytes = 0;
  for (const auto& [name, lines] : sources)
    for (const auto& l : *lines) bytes += l.size() + 1;
  std::string text;
  text.reserve(bytes);
  for (const auto& [name, lines] : sources) {
    EnglishSourceCount count{name, lines->size(), 0};
    for (const auto& l : *lines) {
      count.words += 1 + static_cast<size_t>(std::count(l.begin(), l.end(), ' '));
      text += l;
      text += '\n';
    }
    summary.lines += count.lines;
    summary.words += count.words;
    summary.sources.push_back(count);
  }

  std::unordered_map<std::string_view, size_t> vocabulary;
  const std::string_view all(text);
  for (size_t s = 0; s < all.size();) {
    const size_t e = std::min(all.find_first_of(" \n", s), all.size());
    if (e > s) ++vocabulary[all.substr(s, e - s)];
    s = e + 1;
  }
  summary.vocabulary = vocabulary.size();
  summary.vocabulary_min5 = static_cast<size_t>(std::count_if(
      vocabulary.begin(), vocabulary.end(), [](const auto& kv) { return kv.second >= 5; }));
  summary.fnv1a = fnv1a64(text);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return text;
}

EnglishCorpusSummary export_english_corpus(const std::string& out_dir,
                                           const EnglishCorpusOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  EnglishCorpusSummary summary;
  const std::string text = build_english_corpus(options, summary);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw UserError(out_dir + ": cannot create directory (" + ec.message() + ")");
  atomic_write_text(out_dir + "/english.txt", text);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace nlpzoo
