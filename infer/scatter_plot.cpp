#include "infer/scatter_plot.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/io.h"
#include "infer/png_canvas.h"

namespace nlpzoo {

namespace {

constexpr double kMargin = 50;      // px around the plot area: room for axis labels
constexpr double kTitleSize = 16;   // px
constexpr double kAxisSize = 13;    // px
constexpr double kLabelGap = 4;     // px between a dot and its label
constexpr double kPadFraction = 0.05;  // of the data range, so edge points are not on the frame
// matplotlib's default blue (tab:blue, #1f77b4) for the dots.
constexpr double kDot[3] = {0x1f / 255.0, 0x77 / 255.0, 0xb4 / 255.0};

}  // namespace

ScatterPlotLayout scatter_plot_layout(const torch::Tensor& points, const ScatterPlotOptions& options) {
  if (points.dim() != 2 || points.size(1) != 2 || points.size(0) < 1)
    throw std::invalid_argument("scatter_plot_layout: points must be [N >= 1, 2]");
  const auto p = points.to(torch::kFloat64);
  ScatterPlotLayout l;
  l.width = options.width;
  l.height = options.height;
  l.plot_x = kMargin;
  l.plot_y = kMargin;
  l.plot_w = options.width - 2 * kMargin;
  l.plot_h = options.height - 2 * kMargin;
  const auto axis = [&](int64_t d, double& lo, double& hi) {
    lo = p.select(1, d).min().item<double>();
    hi = p.select(1, d).max().item<double>();
    if (!(hi > lo)) {  // a single point or a flat axis still gets a range, centred on it
      const double half = std::max(1.0, std::abs(hi)) / 2;
      lo -= half;
      hi += half;
    }
    const double pad = kPadFraction * (hi - lo);
    lo -= pad;
    hi += pad;
  };
  axis(0, l.min_x, l.max_x);
  axis(1, l.min_y, l.max_y);
  return l;
}

void plot_scatter_png(const std::string& png_path, const torch::Tensor& points, const std::vector<std::string>& labels,
                      const ScatterPlotOptions& options) {
  if (points.dim() != 2 || points.size(1) != 2)
    throw UserError(png_path + ": a scatter plot needs points [N, 2]");
  const int64_t N = points.size(0);
  if (N == 0) throw UserError(png_path + ": a scatter plot needs at least one point");
  if (static_cast<int64_t>(labels.size()) != N)
    throw UserError(png_path + ": " + std::to_string(labels.size()) + " labels for " + std::to_string(N) + " points");
  if (options.width < 200 || options.height < 150)
    throw UserError(png_path + ": image size " + std::to_string(options.width) + "x" + std::to_string(options.height) +
                    " is below the smallest, 200x150");
  const auto p = points.to(torch::kFloat64).contiguous();
  if (!torch::isfinite(p).all().item<bool>()) throw UserError(png_path + ": a point's coordinate is not finite");
  const ScatterPlotLayout l = scatter_plot_layout(p, options);

  CairoSurface surface = make_png_surface(png_path, l.width, l.height);
  CairoContext owner(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = owner.get();

  cairo_set_line_width(cr, 1);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, l.plot_x + 0.5, l.plot_y + 0.5, l.plot_w - 1, l.plot_h - 1);
  cairo_stroke(cr);

  const double* xy = p.data_ptr<double>();
  cairo_set_source_rgb(cr, kDot[0], kDot[1], kDot[2]);
  for (int64_t i = 0; i < N; ++i) {
    cairo_new_sub_path(cr);
    cairo_arc(cr, l.to_px_x(xy[2 * i]), l.to_px_y(xy[2 * i + 1]), options.point_radius, 0, 2 * M_PI);
  }
  cairo_fill(cr);

  // Labels after all dots, so no dot hides a label; clipped to the image by cairo.
  set_label_font(cr, options.font_size);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  for (int64_t i = 0; i < N; ++i) {
    const double x = l.to_px_x(xy[2 * i]), y = l.to_px_y(xy[2 * i + 1]);
    // Right of the dot, unless that runs past the image's right edge.
    const double w = text_width(cr, labels[i]);
    const double tx = x + options.point_radius + kLabelGap + w <= l.width ? x + options.point_radius + kLabelGap
                                                                           : x - options.point_radius - kLabelGap - w;
    cairo_move_to(cr, tx, y + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, labels[i].c_str());
  }

  cairo_set_source_rgb(cr, 0, 0, 0);
  if (!options.title.empty()) {
    set_label_font(cr, kTitleSize);
    cairo_move_to(cr, l.plot_x + (l.plot_w - text_width(cr, options.title)) / 2, l.plot_y - kMargin / 3);
    cairo_show_text(cr, options.title.c_str());
  }
  set_label_font(cr, kAxisSize);
  if (!options.x_label.empty()) {
    cairo_move_to(cr, l.plot_x + (l.plot_w - text_width(cr, options.x_label)) / 2, l.plot_y + l.plot_h + kMargin * 0.6);
    cairo_show_text(cr, options.x_label.c_str());
  }
  if (!options.y_label.empty()) {
    cairo_save(cr);
    cairo_move_to(cr, kMargin * 0.6, l.plot_y + (l.plot_h + text_width(cr, options.y_label)) / 2);
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, options.y_label.c_str());
    cairo_restore(cr);
  }
  write_png_atomically(surface.get(), png_path);
}

}  // namespace nlpzoo
