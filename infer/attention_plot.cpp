#include "infer/attention_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/io.h"
#include "infer/png_canvas.h"

namespace nlpzoo {

namespace {

constexpr double kCell = 28;       // px per cell: room for a 12 px label per row
constexpr double kFontSize = 12;   // px
constexpr double kPad = 10;        // outer margin
constexpr double kLabelGap = 6;    // between labels and the grid
constexpr double kBarGap = 16;     // between the grid and the colour bar
constexpr double kBarWidth = 12;
constexpr double kBarMinHeight = 100;  // a one-row plot still gets a readable scale
constexpr double kTickGap = 4;
const char* const kTicks[] = {"0", "0.5", "1"};

// Value 1 is matplotlib's "Blues" darkest shade (#08306b); 0 is white.
constexpr double kDark[3] = {0x08 / 255.0, 0x30 / 255.0, 0x6b / 255.0};

void set_font(cairo_t* cr) { set_label_font(cr, kFontSize); }

void set_weight_colour(cairo_t* cr, double w) {
  cairo_set_source_rgb(cr, 1 + (kDark[0] - 1) * w, 1 + (kDark[1] - 1) * w, 1 + (kDark[2] - 1) * w);
}

}  // namespace

AttentionPlotLayout attention_plot_layout(const std::vector<std::string>& source_tokens,
                                          const std::vector<std::string>& target_tokens) {
  // Text can only be measured through a context, so a 1x1 scratch surface provides one.
  CairoSurface scratch(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1), cairo_surface_destroy);
  CairoContext cr(cairo_create(scratch.get()), cairo_destroy);
  set_font(cr.get());
  double src_w = 0, tgt_w = 0, tick_w = 0;
  for (const auto& s : source_tokens) src_w = std::max(src_w, text_width(cr.get(), s));
  for (const auto& t : target_tokens) tgt_w = std::max(tgt_w, text_width(cr.get(), t));
  for (const char* t : kTicks) tick_w = std::max(tick_w, text_width(cr.get(), t));
  cairo_font_extents_t fe;
  cairo_font_extents(cr.get(), &fe);

  AttentionPlotLayout l;
  l.rows = static_cast<int>(target_tokens.size());
  l.cols = static_cast<int>(source_tokens.size());
  l.cell = kCell;
  l.grid_x = std::ceil(kPad + tgt_w + kLabelGap);
  // Source labels stand upright above the grid; half a text height keeps the top tick clear.
  l.grid_y = std::ceil(std::max(kPad + src_w + kLabelGap, kPad + fe.height / 2));
  const double grid_w = l.cols * kCell, grid_h = l.rows * kCell;
  l.bar_x = l.grid_x + grid_w + kBarGap;
  l.bar_y = l.grid_y;
  l.bar_w = kBarWidth;
  l.bar_h = std::max(grid_h, kBarMinHeight);
  l.width = static_cast<int>(std::ceil(l.bar_x + l.bar_w + kTickGap + tick_w + kPad));
  l.height = static_cast<int>(std::ceil(l.grid_y + l.bar_h + fe.height / 2 + kPad));
  return l;
}

void plot_attention_png(const std::string& png_path, const std::vector<std::string>& source_tokens,
                        const std::vector<std::string>& target_tokens,
                        const std::vector<std::vector<float>>& weights) {
  const size_t T = target_tokens.size(), S = source_tokens.size();
  if (T == 0 || S == 0)
    throw UserError(png_path + ": attention plot needs at least one source and one target token (got " +
                    std::to_string(S) + " source, " + std::to_string(T) + " target)");
  if (weights.size() != T)
    throw UserError(png_path + ": attention weights have " + std::to_string(weights.size()) +
                    " rows but there are " + std::to_string(T) + " target tokens");
  for (size_t t = 0; t < T; ++t) {
    if (weights[t].size() != S)
      throw UserError(png_path + ": attention weights row " + std::to_string(t) + " has " +
                      std::to_string(weights[t].size()) + " columns but there are " +
                      std::to_string(S) + " source tokens");
    for (size_t s = 0; s < S; ++s)
      if (!std::isfinite(weights[t][s]))
        throw UserError(png_path + ": attention weight [" + std::to_string(t) + "][" +
                        std::to_string(s) + "] is not finite");
  }

  const AttentionPlotLayout l = attention_plot_layout(source_tokens, target_tokens);
  CairoSurface surface = make_png_surface(png_path, l.width, l.height);
  CairoContext cr_owner(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = cr_owner.get();

  for (size_t t = 0; t < T; ++t)
    for (size_t s = 0; s < S; ++s) {
      set_weight_colour(cr, std::clamp(static_cast<double>(weights[t][s]), 0.0, 1.0));
      cairo_rectangle(cr, l.grid_x + s * l.cell, l.grid_y + t * l.cell, l.cell, l.cell);
      cairo_fill(cr);
    }
  // Thin light lines keep neighbouring near-white cells apart; centred on pixel edges + 0.5
  // so they stay one pixel wide.
  cairo_set_line_width(cr, 1);
  cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
  for (size_t s = 1; s < S; ++s) {
    cairo_move_to(cr, l.grid_x + s * l.cell + 0.5, l.grid_y);
    cairo_line_to(cr, l.grid_x + s * l.cell + 0.5, l.grid_y + T * l.cell);
  }
  for (size_t t = 1; t < T; ++t) {
    cairo_move_to(cr, l.grid_x, l.grid_y + t * l.cell + 0.5);
    cairo_line_to(cr, l.grid_x + S * l.cell, l.grid_y + t * l.cell + 0.5);
  }
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, l.grid_x + 0.5, l.grid_y + 0.5, S * l.cell - 1, T * l.cell - 1);
  cairo_stroke(cr);

  set_font(cr);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  // Offset that puts the middle of the font's ascent..descent band on a given line.
  const double centre_shift = (fe.ascent - fe.descent) / 2;
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (size_t t = 0; t < T; ++t) {
    cairo_move_to(cr, l.grid_x - kLabelGap - text_width(cr, target_tokens[t]),
                  l.cell_center_y(static_cast<int>(t)) + centre_shift);
    cairo_show_text(cr, target_tokens[t].c_str());
  }
  for (size_t s = 0; s < S; ++s) {
    // Rotated a quarter turn anticlockwise the text reads upwards from the grid, and the
    // glyphs' ascent lies to the left of the baseline, hence + centre_shift.
    cairo_save(cr);
    cairo_move_to(cr, l.cell_center_x(static_cast<int>(s)) + centre_shift, l.grid_y - kLabelGap);
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, source_tokens[s].c_str());
    cairo_restore(cr);
  }

  // Colour bar: 1 at the top, 0 at the bottom, with three ticks.
  cairo_pattern_t* grad = cairo_pattern_create_linear(0, l.bar_y + l.bar_h, 0, l.bar_y);
  cairo_pattern_add_color_stop_rgb(grad, 0, 1, 1, 1);
  cairo_pattern_add_color_stop_rgb(grad, 1, kDark[0], kDark[1], kDark[2]);
  cairo_rectangle(cr, l.bar_x, l.bar_y, l.bar_w, l.bar_h);
  cairo_set_source(cr, grad);
  cairo_fill(cr);
  cairo_pattern_destroy(grad);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, l.bar_x + 0.5, l.bar_y + 0.5, l.bar_w - 1, l.bar_h - 1);
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (int i = 0; i < 3; ++i) {
    const double y = l.bar_y + l.bar_h * (1 - i / 2.0);
    cairo_move_to(cr, l.bar_x + l.bar_w + kTickGap, y + centre_shift);
    cairo_show_text(cr, kTicks[i]);
  }

  write_png_atomically(surface.get(), png_path);
}

}  // namespace nlpzoo
