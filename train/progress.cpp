#include "train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace nlpzoo {

Progress::Progress(bool live) : live_(live) {}

bool Progress::stdout_is_terminal() { return isatty(fileno(stdout)) != 0; }

std::string format_duration(double seconds) {
  if (seconds < 0) return "--:--";
  auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

void Progress::update(const ProgressInfo& p, bool report) {
  if (!live_ && !report) return;
  char loss[64] = "loss -", ppl[32] = "", gnorm[32] = "";
  if (p.loss) std::snprintf(loss, sizeof loss, "loss %.4f", *p.loss);
  if (p.loss && p.perplexity) std::snprintf(ppl, sizeof ppl, " | ppl %.2f", std::exp(std::min(*p.loss, 50.0)));
  if (p.grad_norm) std::snprintf(gnorm, sizeof gnorm, " | gnorm %.3f", *p.grad_norm);
  char buf[320];
  std::snprintf(buf, sizeof buf, "step %lld | epoch %lld | %s%s | lr %.3g | %.0f %s/s%s | eta %s",
                static_cast<long long>(p.step), static_cast<long long>(p.epoch + 1), loss, ppl, p.lr, p.units_per_s,
                p.unit.c_str(), gnorm, format_duration(p.eta_s).c_str());
  if (live_) {
    std::cout << "\r\033[K" << buf << std::flush;
    line_open_ = true;
  } else {
    std::cout << buf << std::endl;
  }
}

void Progress::message(const std::string& line) {
  if (line_open_) std::cout << "\r\033[K";
  line_open_ = false;
  std::cout << line << std::endl;
}

}  // namespace nlpzoo
