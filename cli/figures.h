// Figures drawn by the CLI (`sweep`, `reach --plot`) through gnuplot-iostream: each figure
// is written twice, PNG (pngcairo) and SVG, into a temporary name and renamed into place,
// so a figure is never half-written.
#pragma once

#include <functional>
#include <gnuplot-iostream.h>
#include <string>
#include <utility>
#include <vector>

namespace sparseattn::cli {

// Whether a `gnuplot` executable is on PATH; when not, `why` says so.
bool gnuplot_available(std::string* why);

// Writes DIR/NAME.png and DIR/NAME.svg; `body` sends the plot commands (terminal, output,
// grid and key are set already). Throws RuntimeError when gnuplot fails to write them.
void write_figure(const std::string& dir, const std::string& name,
                  const std::function<void(Gnuplot&)>& body);

// A named line: (x, y) points.
using FigureLine = std::pair<std::string, std::vector<std::pair<double, double>>>;

// "plot '-' ..., '-' ..." followed by every line's points; `style` per line is
// "linespoints lw 2 pt 7" unless `styles` names one.
void plot_lines(Gnuplot& gp, const std::vector<FigureLine>& lines,
                const std::vector<std::string>& styles = {});

// Escapes text for a gnuplot title inside single quotes (underscores would subscript).
std::string gnuplot_text(const std::string& text);

}  // namespace sparseattn::cli
