// The attention heatmap: size, where cells are, and that weight maps to darkness.
#include <cairo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/io.h"
#include "infer/attention_plot.h"

namespace nlpzoo {
namespace {

// Mean of R, G, B at (x, y) of an RGB24/ARGB32 image: 0 black, 255 white.
double brightness(cairo_surface_t* img, double x, double y) {
  const unsigned char* data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  const auto* px = reinterpret_cast<const uint32_t*>(data + static_cast<int>(y) * stride) +
                   static_cast<int>(x);
  return (((*px >> 16) & 0xFF) + ((*px >> 8) & 0xFF) + (*px & 0xFF)) / 3.0;
}

class AttentionPlot : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nlpzoo_attention_plot_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  const std::vector<std::string> src_{"le", "chat", "noir", "</s>"};
  const std::vector<std::string> tgt_{"the", "black", "cat"};
  // [T=3][S=4]; row 1 attends fully to "noir", row 0 half to "le".
  const std::vector<std::vector<float>> w_{
      {0.5f, 0.3f, 0.1f, 0.1f}, {0.0f, 0.0f, 1.0f, 0.0f}, {0.0f, 0.9f, 0.05f, 0.05f}};
};

TEST_F(AttentionPlot, WritesPngWithCellsDarkerForLargerWeights) {
  const std::string png = (dir_ / "attn.png").string();
  plot_attention_png(png, src_, tgt_, w_);

  cairo_surface_t* img = cairo_image_surface_create_from_png(png.c_str());
  ASSERT_EQ(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
  const auto l = attention_plot_layout(src_, tgt_);
  EXPECT_EQ(cairo_image_surface_get_width(img), l.width);
  EXPECT_EQ(cairo_image_surface_get_height(img), l.height);
  // A 4x3 grid of 28 px cells plus labels and a colour bar: larger than the grid, far from huge.
  EXPECT_EQ(l.rows, 3);
  EXPECT_EQ(l.cols, 4);
  EXPECT_GE(l.cell, 24);
  EXPECT_LE(l.cell, 32);
  EXPECT_GT(l.width, l.grid_x + 4 * l.cell);
  EXPECT_GT(l.height, l.grid_y + 3 * l.cell);
  EXPECT_LT(l.width, 600);
  EXPECT_LT(l.height, 600);
  // The labels measured by cairo push the grid away from the top and left edges.
  EXPECT_GT(l.grid_x, 20);
  EXPECT_GT(l.grid_y, 20);

  const double one = brightness(img, l.cell_center_x(2), l.cell_center_y(1));     // 1.0
  const double zero = brightness(img, l.cell_center_x(0), l.cell_center_y(1));    // 0.0
  const double half = brightness(img, l.cell_center_x(0), l.cell_center_y(0));    // 0.5
  const double high = brightness(img, l.cell_center_x(1), l.cell_center_y(2));    // 0.9
  EXPECT_EQ(zero, 255.0);  // weight 0 is white
  EXPECT_LT(one, 80.0);    // weight 1 is dark
  EXPECT_LT(one, high);
  EXPECT_LT(high, half);
  EXPECT_LT(half, zero);
  // The colour bar runs from dark (top) to white (bottom).
  EXPECT_LT(brightness(img, l.bar_x + l.bar_w / 2, l.bar_y + 2),
            brightness(img, l.bar_x + l.bar_w / 2, l.bar_y + l.bar_h - 2));
  cairo_surface_destroy(img);
  // Atomic write: nothing but the PNG is left in the folder.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(AttentionPlot, LongerLabelsWidenTheMargins) {
  const auto short_l = attention_plot_layout(src_, tgt_);
  const auto long_l = attention_plot_layout({"le", "chat", "anticonstitutionnellement", "</s>"},
                                            {"the", "black", "unconstitutionally"});
  EXPECT_GT(long_l.grid_x, short_l.grid_x + 40);
  EXPECT_GT(long_l.grid_y, short_l.grid_y + 40);
}

TEST_F(AttentionPlot, ShapeMismatchThrowsAndWritesNothing) {
  const std::string png = (dir_ / "bad.png").string();
  EXPECT_THROW(plot_attention_png(png, src_, {"the", "black"}, w_), UserError);
  auto ragged = w_;
  ragged[2].pop_back();
  try {
    plot_attention_png(png, src_, tgt_, ragged);
    ADD_FAILURE() << "no exception for a ragged row";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.png"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("row 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plot_attention_png(png, {}, {}, {}), UserError);
  EXPECT_FALSE(std::filesystem::exists(png));
}

}  // namespace
}  // namespace nlpzoo
