#include "tools/report_sections.hh"

namespace tnbc::tools::report {

Section text_section(const std::string& key, const std::string& title, const std::string& text) {
  std::string html = "<pre class=\"section\">";
  for (char c : text) {
    switch (c) {
      case '&': html += "&amp;"; break;
      case '<': html += "&lt;"; break;
      case '>': html += "&gt;"; break;
      default: html += c;
    }
  }
  html += "</pre>";
  return {key, title, text, "", text.empty() ? std::string() : html};
}

}  // namespace tnbc::tools::report
