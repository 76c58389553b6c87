#pragma once
// Attention heatmaps as PNG (cairo), the picture of Bahdanau et al. (2015, "Neural Machine
// Translation by Jointly Learning to Align and Translate", fig. 3): one row per target step,
// one column per source token, darker = more attention.
#include <string>
#include <vector>

namespace nlpzoo {

/// Where everything sits in the image, in pixels from the top-left corner. Drawing and tests
/// both use it, so a test can find the centre of a cell without guessing.
struct AttentionPlotLayout {
  int width = 0;        // image width
  int height = 0;       // image height
  double cell = 0;      // side of one square cell
  double grid_x = 0;    // left edge of the grid (source column 0)
  double grid_y = 0;    // top edge of the grid (target row 0)
  int rows = 0;         // target tokens T
  int cols = 0;         // source tokens S
  double bar_x = 0;     // colour bar: left edge
  double bar_y = 0;     //   top edge (value 1)
  double bar_w = 0;     //   width
  double bar_h = 0;     //   height (bottom edge is value 0)
  double cell_center_x(int source_index) const { return grid_x + (source_index + 0.5) * cell; }
  double cell_center_y(int target_index) const { return grid_y + (target_index + 0.5) * cell; }
};

/// Computes the layout for these labels: 28 px cells, margins sized to the longest labels
/// as measured by cairo in the font the plot uses (sans-serif, 12 px).
AttentionPlotLayout attention_plot_layout(const std::vector<std::string>& source_tokens,
                                          const std::vector<std::string>& target_tokens);

/// Writes an attention heatmap to `png_path` (atomically). Source tokens label the columns
/// (rotated, above the grid), target tokens the rows (left). weights is [T][S] with
/// T = target_tokens.size() and S = source_tokens.size(); values are attention
/// probabilities drawn from white (0) to dark blue (1), clamped to [0, 1]; a colour bar on
/// the right gives the scale. Throws UserError naming png_path when there are no tokens,
/// when the shape of weights does not match the tokens, when a weight is not finite, or
/// when the PNG cannot be written.
void plot_attention_png(const std::string& png_path, const std::vector<std::string>& source_tokens,
                        const std::vector<std::string>& target_tokens,
                        const std::vector<std::vector<float>>& weights);

}  // namespace nlpzoo
