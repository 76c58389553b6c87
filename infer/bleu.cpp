#include "infer/bleu.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "core/io.h"
#include "core/utf8.h"

namespace nlpzoo {

namespace {

// One decoded UTF-8 unit: a code point, or an invalid byte kept as is (cp = -1) so that
// malformed input passes through byte-exact instead of being rejected.
struct Unit {
  int32_t cp;
  size_t pos;
  size_t len;
};

std::vector<Unit> decode_utf8(const std::string& s) {
  std::vector<Unit> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Utf8CodePoint u = decode_utf8_at(s, i);
    out.push_back({u.valid ? static_cast<int32_t>(u.value) : -1, i, u.length});
    i += u.length;
  }
  return out;
}

// Python's str.isspace() set, which str.split() and str.rstrip() use.
bool is_py_space(int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Simple lowercase mapping of the supported blocks; returns cp when it has none here.
int32_t lower_simple(int32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 0x20;
  if (cp < 0xC0) return cp;
  if (cp <= 0xDE) return cp == 0xD7 ? cp : cp + 0x20;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x178) return 0xFF;
    const bool even_upper = (cp <= 0x137 && cp != 0x130 && cp != 0x131) ||
                            (cp >= 0x14A && cp <= 0x177);
    const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if ((even_upper && cp % 2 == 0) || (odd_upper && cp % 2 == 1)) return cp + 1;
    return cp;
  }
  if (cp == 0x220) return 0x19E;
  if (((cp >= 0x200 && cp <= 0x21F) || (cp >= 0x222 && cp <= 0x233)) && cp % 2 == 0) return cp + 1;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 0x20;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
  return cp;
}

// Approximations of Unicode's Cased and Case_Ignorable properties, enough for the final
// sigma rule on the blocks lower_simple covers.
bool is_cased(int32_t cp) {
  if ((cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z')) return true;
  if (cp == 0xAA || cp == 0xB5 || cp == 0xBA) return true;
  if (cp >= 0xC0 && cp <= 0x24F) return cp != 0xD7 && cp != 0xF7;
  if (cp >= 0x370 && cp <= 0x3FF) return cp != 0x375 && cp != 0x37E && cp != 0x384 &&
                                         cp != 0x385 && cp != 0x387;
  return cp >= 0x400 && cp <= 0x4FF && !(cp >= 0x482 && cp <= 0x489);
}
bool is_case_ignorable(int32_t cp) {
  return cp == '\'' || cp == '.' || cp == ':' || cp == '^' || cp == '`' || cp == 0xA8 ||
         cp == 0xAD || cp == 0xAF || cp == 0xB4 || cp == 0xB7 || cp == 0xB8 ||
         (cp >= 0x300 && cp <= 0x36F) || cp == 0x2018 || cp == 0x2019 || cp == 0x2024 ||
         cp == 0x2027;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  for (size_t j; (j = s.find(from, i)) != std::string::npos; i = j + from.size()) {
    out.append(s, i, j - i);
    out += to;
  }
  out.append(s, i, std::string::npos);
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_period_or_comma(char c) { return c == '.' || c == ','; }

// The ASCII punctuation that 13a pads with spaces: 0x20-0x26, 0x28-0x2B, 0x2F, 0x3A-0x40,
// 0x5B-0x60, 0x7B-0x7E (everything printable but ' , - . and alphanumerics).
bool is_13a_punct(char ch) {
  auto c = static_cast<unsigned char>(ch);
  return (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) || c == 0x2F ||
         (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

// One left-to-right pass of a two-character pattern with non-overlapping matches, like
// Python's re.sub: a match consumes both characters, so the second cannot start the next.
template <typename First, typename Second, typename Emit>
std::string two_char_pass(const std::string& s, First first, Second second, Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Python's str.rstrip() on UTF-8.
std::string rstrip_py(const std::string& s) {
  auto units = decode_utf8(s);
  size_t end = units.size();
  while (end > 0 && is_py_space(units[end - 1].cp)) --end;
  return s.substr(0, end == 0 ? 0 : units[end - 1].pos + units[end - 1].len);
}

using NgramCounts = std::vector<std::unordered_map<std::string, int64_t>>;  // [N]

// Counts every n-gram, n = 1..N; tokens never hold whitespace, so a space joins them safely.
NgramCounts count_ngrams(const std::vector<std::string>& tokens, int max_order) {
  NgramCounts counts(max_order);
  for (int n = 1; n <= max_order; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      std::string key = tokens[i];
      for (int k = 1; k < n; ++k) key += ' ' + tokens[i + k];
      ++counts[n - 1][key];
    }
  }
  return counts;
}

}  // namespace

BleuTokenize parse_bleu_tokenize(const std::string& name) {
  if (name == "13a") return BleuTokenize::k13a;
  if (name == "none") return BleuTokenize::kNone;
  throw UserError("--tokenize: unknown BLEU tokenizer '" + name + "' (supported: 13a, none)");
}

BleuSmooth parse_bleu_smooth(const std::string& name) {
  if (name == "exp") return BleuSmooth::kExp;
  if (name == "floor") return BleuSmooth::kFloor;
  if (name == "add-k") return BleuSmooth::kAddK;
  if (name == "none") return BleuSmooth::kNone;
  throw UserError("--smooth: unknown BLEU smoothing '" + name +
                  "' (supported: exp, floor, add-k, none)");
}

std::string to_string(BleuTokenize tokenize) {
  return tokenize == BleuTokenize::k13a ? "13a" : "none";
}

std::string to_string(BleuSmooth smooth) {
  switch (smooth) {
    case BleuSmooth::kExp: return "exp";
    case BleuSmooth::kFloor: return "floor";
    case BleuSmooth::kAddK: return "add-k";
    case BleuSmooth::kNone: return "none";
  }
  return "none";
}

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  sys_len += other.sys_len;
  ref_len += other.ref_len;
  if (counts.size() < other.counts.size()) counts.resize(other.counts.size(), 0);
  if (totals.size() < other.totals.size()) totals.resize(other.totals.size(), 0);
  for (size_t n = 0; n < other.counts.size(); ++n) counts[n] += other.counts[n];
  for (size_t n = 0; n < other.totals.size(); ++n) totals[n] += other.totals[n];
  return *this;
}

std::string BleuScore::format() const {
  std::string precs;
  char buf[64];
  for (size_t n = 0; n < precisions.size(); ++n) {
    std::snprintf(buf, sizeof buf, "%s%.1f", n ? "/" : "", precisions[n]);
    precs += buf;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "BLEU = %.2f %s (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)", score,
                precs.c_str(), bp, ratio, static_cast<long long>(sys_len),
                static_cast<long long>(ref_len));
  return line;
}

std::string lowercase_utf8(const std::string& text) {
  auto units = decode_utf8(text);
  std::string out;
  out.reserve(text.size() + 2);
  for (size_t i = 0; i < units.size(); ++i) {
    const Unit& u = units[i];
    if (u.cp < 0) {
      out.append(text, u.pos, u.len);
    } else if (u.cp == 0x130) {
      // Python's full mapping: capital I with dot becomes "i" + combining dot above.
      out += 'i';
      append_utf8(out, 0x307);
    } else if (u.cp == 0x3A3) {
      // Final_Sigma (Unicode 3.13): a cased letter before (skipping case-ignorables) and
      // none after makes it the word-final form.
      bool before = false, after = false;
      for (size_t j = i; j-- > 0;) {
        if (is_case_ignorable(units[j].cp)) continue;
        before = is_cased(units[j].cp);
        break;
      }
      for (size_t j = i + 1; j < units.size(); ++j) {
        if (is_case_ignorable(units[j].cp)) continue;
        after = is_cased(units[j].cp);
        break;
      }
      append_utf8(out, before && !after ? 0x3C2 : 0x3C3);
    } else {
      append_utf8(out, lower_simple(u.cp));
    }
  }
  return out;
}

std::vector<std::string> split_whitespace(const std::string& text) {
  std::vector<std::string> tokens;
  size_t start = std::string::npos;
  for (const Unit& u : decode_utf8(text)) {
    if (is_py_space(u.cp)) {
      if (start != std::string::npos) tokens.push_back(text.substr(start, u.pos - start));
      start = std::string::npos;
    } else if (start == std::string::npos) {
      start = u.pos;
    }
  }
  if (start != std::string::npos) tokens.push_back(text.substr(start));
  return tokens;
}

std::string tokenize_13a(const std::string& text) {
  std::string s = replace_all(text, "<skipped>", "");
  s = replace_all(s, "-\n", "");
  s = replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    // Order matters: "&amp;lt;" must become "<", as mteval-v13a does.
    s = replace_all(s, "&quot;", "\"");
    s = replace_all(s, "&amp;", "&");
    s = replace_all(s, "&lt;", "<");
    s = replace_all(s, "&gt;", ">");
  }
  // The padding lets the period rules below see a non-digit after a final "1990.".
  std::string padded;
  padded.reserve(2 * s.size() + 2);
  padded += ' ';
  for (char c : s) {
    if (is_13a_punct(c)) {
      padded += ' ';
      padded += c;
      padded += ' ';
    } else {
      padded += c;
    }
  }
  padded += ' ';
  // Bytes suffice from here on: spaces only go next to ASCII characters, and every byte of
  // a multi-byte character is a "non-digit" just as the character is.
  auto not_digit = [](char c) { return !is_digit(c); };
  s = two_char_pass(padded, not_digit, is_period_or_comma, [](std::string& o, char a, char b) {
    o += a;
    o += ' ';
    o += b;
    o += ' ';
  });
  s = two_char_pass(s, is_period_or_comma, not_digit, [](std::string& o, char a, char b) {
    o += ' ';
    o += a;
    o += ' ';
    o += b;
  });
  s = two_char_pass(s, is_digit, [](char c) { return c == '-'; },
                    [](std::string& o, char a, char b) {
                      o += a;
                      o += ' ';
                      o += b;
                      o += ' ';
                    });
  std::string out;
  for (const auto& tok : split_whitespace(s)) {
    if (!out.empty()) out += ' ';
    out += tok;
  }
  return out;
}

std::vector<std::string> bleu_tokens(const std::string& segment, const BleuOptions& opts) {
  std::string s = rstrip_py(opts.lowercase ? lowercase_utf8(segment) : segment);
  if (opts.tokenize == BleuTokenize::k13a) s = tokenize_13a(s);
  return split_whitespace(s);
}

BleuStats bleu_segment_stats(const std::string& hyp, const std::vector<std::string>& refs,
                             const BleuOptions& opts) {
  const int N = opts.max_ngram_order;
  if (N < 1) throw std::invalid_argument("BLEU: max_ngram_order must be >= 1");
  const auto hyp_tokens = bleu_tokens(hyp, opts);
  const auto hyp_len = static_cast<int64_t>(hyp_tokens.size());

  // Clipping uses, per n-gram, the largest count in any one reference (Papineni et al. 2.1).
  NgramCounts ref_max(N);
  int64_t best_len = 0, best_diff = -1;
  for (const auto& ref : refs) {
    const auto ref_tokens = bleu_tokens(ref, opts);
    const auto len = static_cast<int64_t>(ref_tokens.size());
    const int64_t diff = std::llabs(len - hyp_len);
    if (best_diff < 0 || diff < best_diff || (diff == best_diff && len < best_len)) {
      best_diff = diff;
      best_len = len;
    }
    auto counts = count_ngrams(ref_tokens, N);
    for (int n = 0; n < N; ++n)
      for (const auto& [gram, c] : counts[n]) {
        int64_t& m = ref_max[n][gram];
        if (c > m) m = c;
      }
  }

  BleuStats st;
  st.sys_len = hyp_len;
  st.ref_len = best_len;
  st.counts.assign(N, 0);
  st.totals.assign(N, 0);
  const auto hyp_counts = count_ngrams(hyp_tokens, N);
  for (int n = 0; n < N; ++n) {
    st.totals[n] = std::max<int64_t>(0, hyp_len - n);
    for (const auto& [gram, c] : hyp_counts[n]) {
      auto it = ref_max[n].find(gram);
      if (it != ref_max[n].end()) st.counts[n] += std::min(c, it->second);
    }
  }
  return st;
}

BleuStats bleu_corpus_stats(const std::vector<std::string>& hyps,
                            const std::vector<std::vector<std::string>>& ref_streams,
                            const BleuOptions& opts) {
  for (size_t k = 0; k < ref_streams.size(); ++k)
    if (ref_streams[k].size() != hyps.size())
      throw UserError("BLEU: reference stream " + std::to_string(k + 1) + " has " +
                      std::to_string(ref_streams[k].size()) + " segments but there are " +
                      std::to_string(hyps.size()) + " hypotheses");
  BleuStats total;
  total.counts.assign(std::max(opts.max_ngram_order, 0), 0);
  total.totals.assign(std::max(opts.max_ngram_order, 0), 0);
  std::vector<std::string> refs(ref_streams.size());
  for (size_t i = 0; i < hyps.size(); ++i) {
    for (size_t k = 0; k < ref_streams.size(); ++k) refs[k] = ref_streams[k][i];
    total += bleu_segment_stats(hyps[i], refs, opts);
  }
  return total;
}

BleuScore compute_bleu(const std::vector<int64_t>& counts, const std::vector<int64_t>& totals,
                       int64_t sys_len, int64_t ref_len, BleuSmooth smooth_method,
                       std::optional<double> smooth_value, bool use_effective_order,
                       int max_ngram_order) {
  const int N = max_ngram_order;
  if (N < 1) throw std::invalid_argument("BLEU: max_ngram_order must be >= 1");
  if (counts.size() < static_cast<size_t>(N) || totals.size() < static_cast<size_t>(N))
    throw std::invalid_argument("BLEU: counts and totals need max_ngram_order entries");
  const double k = smooth_value.value_or(smooth_method == BleuSmooth::kFloor  ? 0.1
                                         : smooth_method == BleuSmooth::kAddK ? 1.0
                                                                              : 0.0);
  BleuScore r;
  r.sys_len = sys_len;
  r.ref_len = ref_len;
  r.counts.assign(counts.begin(), counts.begin() + N);
  r.totals.assign(totals.begin(), totals.begin() + N);
  r.precisions.assign(N, 0.0);
  r.ratio = ref_len > 0 ? static_cast<double>(sys_len) / static_cast<double>(ref_len) : 0.0;
  if (sys_len < ref_len)
    r.bp = sys_len > 0
               ? std::exp(1.0 - static_cast<double>(ref_len) / static_cast<double>(sys_len))
               : 0.0;
  else
    r.bp = 1.0;

  // Checked before smoothing (sacreBLEU issue #141): no smoothing rescues a hypothesis
  // without a single matching unigram.
  bool any_match = false;
  for (int n = 0; n < N; ++n) any_match = any_match || counts[n] != 0;
  if (!any_match) {
    r.score = 0.0;
    return r;
  }

  int eff = N;
  double exp_divisor = 1.0;
  for (int n = 0; n < N; ++n) {
    if (smooth_method == BleuSmooth::kAddK && n >= 1) {
      r.counts[n] += k;
      r.totals[n] += k;
    }
    if (r.totals[n] == 0) break;
    if (use_effective_order) eff = n + 1;
    if (r.counts[n] > 0) {
      r.precisions[n] = 100.0 * r.counts[n] / r.totals[n];
    } else if (smooth_method == BleuSmooth::kExp) {
      exp_divisor *= 2.0;
      r.precisions[n] = 100.0 / (exp_divisor * r.totals[n]);
    } else if (smooth_method == BleuSmooth::kFloor) {
      r.precisions[n] = 100.0 * k / r.totals[n];
    }
  }
  // log(0) is floored rather than -inf so that one zero precision yields exactly 0.
  double log_sum = 0.0;
  for (int n = 0; n < eff; ++n)
    log_sum += r.precisions[n] == 0.0 ? -9999999999.0 : std::log(r.precisions[n]);
  r.score = r.bp * std::exp(log_sum / eff);
  return r;
}

BleuScore compute_bleu(const BleuStats& stats, const BleuOptions& opts) {
  return compute_bleu(stats.counts, stats.totals, stats.sys_len, stats.ref_len,
                      opts.smooth_method, opts.smooth_value, opts.use_effective_order,
                      opts.max_ngram_order);
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& ref_streams,
                      const BleuOptions& opts) {
  return compute_bleu(bleu_corpus_stats(hyps, ref_streams, opts), opts);
}

BleuScore sentence_bleu(const std::string& hyp, const std::vector<std::string>& refs,
                        const BleuOptions& opts) {
  return compute_bleu(bleu_segment_stats(hyp, refs, opts), opts);
}

std::string bleu_signature(const BleuOptions& opts, int num_refs) {
  std::string smooth = to_string(opts.smooth_method);
  if (opts.smooth_method == BleuSmooth::kFloor || opts.smooth_method == BleuSmooth::kAddK) {
    char buf[64];
    const double v =
        opts.smooth_value.value_or(opts.smooth_method == BleuSmooth::kFloor ? 0.1 : 1.0);
    std::snprintf(buf, sizeof buf, "[%.2f]", v);
    smooth += buf;
  }
  std::string sig = "nrefs:" + std::to_string(num_refs) +
                    "|case:" + (opts.lowercase ? "lc" : "mixed") +
                    "|eff:" + (opts.use_effective_order ? "yes" : "no") +
                    "|tok:" + to_string(opts.tokenize) + "|smooth:" + smooth;
  if (opts.max_ngram_order != 4) sig += "|ngram:" + std::to_string(opts.max_ngram_order);
  return sig + "|version:nlpzoo";
}

}  // namespace nlpzoo
