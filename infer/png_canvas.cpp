#include "infer/png_canvas.h"

#include "core/io.h"

namespace nlpzoo {

CairoSurface make_png_surface(const std::string& png_path, int width, int height) {
  CairoSurface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
    throw UserError(png_path + ": cannot make a " + std::to_string(width) + "x" + std::to_string(height) + " image (" +
                    cairo_status_to_string(cairo_surface_status(surface.get())) + ")");
  CairoContext cr(cairo_create(surface.get()), cairo_destroy);
  cairo_set_source_rgb(cr.get(), 1, 1, 1);
  cairo_paint(cr.get());
  return surface;
}

void set_label_font(cairo_t* cr, double size_px) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size_px);
}

double text_width(cairo_t* cr, const std::string& text) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text.c_str(), &e);
  return e.x_advance;
}

void write_png_atomically(cairo_surface_t* surface, const std::string& png_path) {
  cairo_surface_flush(surface);
  atomic_write(png_path, [&](const std::string& tmp) {
    const cairo_status_t st = cairo_surface_write_to_png(surface, tmp.c_str());
    if (st != CAIRO_STATUS_SUCCESS)
      throw UserError(png_path + ": cannot write PNG (" + cairo_status_to_string(st) + ")");
  });
}

}  // namespace nlpzoo
