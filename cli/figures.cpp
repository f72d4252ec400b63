#include "cli/figures.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace sparseattn::cli {

bool gnuplot_available(std::string* why) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/gnuplot").c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  if (why) *why = "gnuplot not found on PATH (apt install gnuplot); no figures drawn";
  return false;
}

void write_figure(const std::string& dir, const std::string& name,
                  const std::function<void(Gnuplot&)>& body) {
  const std::pair<const char*, const char*> terms[] = {
      {"pngcairo size 960,640 font ',11'", "png"},
      {"svg size 960,640 font 'Helvetica,13' background '#ffffff'", "svg"}};
  for (const auto& [term, ext] : terms) {
    const std::string final_path = dir + "/" + name + "." + ext;
    const std::string tmp = dir + "/" + name + ".tmp-" + std::to_string(::getpid()) + "." + ext;
    {
      Gnuplot gp("gnuplot");
      gp << "set terminal " << term << "\n";
      gp << "set output '" << tmp << "'\n";
      gp << "set grid\nset key top left box opaque\n";
      body(gp);
      gp << "unset output\n";
    }  // the destructor closes the pipe and waits for gnuplot
    std::error_code ec;
    if (!std::filesystem::exists(tmp, ec) || std::filesystem::file_size(tmp, ec) == 0) {
      std::filesystem::remove(tmp, ec);
      throw RuntimeError("gnuplot did not write " + final_path);
    }
    std::filesystem::rename(tmp, final_path, ec);
    if (ec) throw RuntimeError("cannot rename " + tmp + " to " + final_path + ": " + ec.message());
  }
}

void plot_lines(Gnuplot& gp, const std::vector<FigureLine>& lines,
                const std::vector<std::string>& styles) {
  // gnuplot rejects an inline data block without points: such lines are left out.
  gp << "plot ";
  bool first = true;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].second.empty()) continue;
    gp << (first ? "" : ", ") << "'-' with "
       << (i < styles.size() && !styles[i].empty() ? styles[i] : "linespoints lw 2 pt 7")
       << " title '" << gnuplot_text(lines[i].first) << "'";
    first = false;
  }
  if (first) gp << "NaN notitle";  // nothing to draw: an empty, labelled frame
  gp << "\n";
  for (const auto& l : lines)
    if (!l.second.empty()) gp.send1d(l.second);
}

std::string gnuplot_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '_' || c == '^' || c == '{' || c == '}' || c == '@' || c == '&') out += '\\';
    if (c == '\'') {
      out += "''";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace sparseattn::cli
