#pragma once
// A labelled 2-D scatter plot as PNG (cairo): one dot and one label per word, the picture of
// word vectors projected by PCA or t-SNE.
#include <torch/torch.h>

#include <string>
#include <vector>

namespace nlpzoo {

struct ScatterPlotOptions {
  int width = 1200;         // image width, px
  int height = 900;         // image height, px
  std::string title;        // drawn above the plot (none when empty)
  std::string x_label;      // under the plot, e.g. "PC1 (31.2% of variance)"
  std::string y_label;      // left of the plot, rotated
  double point_radius = 3;  // px
  double font_size = 11;    // label text, px
};

/// Where the data land in the image, in pixels from the top-left corner; drawing and tests
/// both use it. Each axis is scaled on its own to fill the plot area.
struct ScatterPlotLayout {
  int width = 0, height = 0;
  double plot_x = 0, plot_y = 0, plot_w = 0, plot_h = 0;  // the framed plot area
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;      // data range shown (padded by 5%)
  double to_px_x(double x) const { return plot_x + (x - min_x) / (max_x - min_x) * plot_w; }
  double to_px_y(double y) const { return plot_y + (max_y - y) / (max_y - min_y) * plot_h; }  // y grows up
};

/// The layout for points [N, 2] (any float dtype, N >= 1). Throws std::invalid_argument for
/// another shape.
ScatterPlotLayout scatter_plot_layout(const torch::Tensor& points, const ScatterPlotOptions& options = {});

/// Draws points [N, 2] with labels[i] beside point i and writes the PNG to `png_path`
/// atomically. Throws UserError naming png_path when there are no points, labels.size() != N,
/// a coordinate is not finite, the image size is below 200x150, or the file cannot be written.
void plot_scatter_png(const std::string& png_path, const torch::Tensor& points, const std::vector<std::string>& labels,
                      const ScatterPlotOptions& options = {});

}  // namespace nlpzoo
