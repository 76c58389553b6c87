#pragma once
// What every cairo PNG plot of nlpzoo shares: owning handles, the label font, text
// measurement and the atomic PNG write.
#include <cairo.h>

#include <memory>
#include <string>

namespace nlpzoo {

using CairoSurface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using CairoContext = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

/// A white RGB24 image of width x height pixels. Throws UserError naming `png_path` when
/// cairo cannot make it (e.g. too large).
CairoSurface make_png_surface(const std::string& png_path, int width, int height);

/// Selects the plots' label font (sans-serif, normal) at `size_px` pixels.
void set_label_font(cairo_t* cr, double size_px);

/// Horizontal advance of `text` in the context's current font, in pixels.
double text_width(cairo_t* cr, const std::string& text);

/// Writes `surface` to `png_path` atomically (temporary file + rename). Throws UserError naming
/// `png_path` when it cannot be written.
void write_png_atomically(cairo_surface_t* surface, const std::string& png_path);

}  // namespace nlpzoo
