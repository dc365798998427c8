#include "tools/report_sections.hh"

#include "tools/report_render.hh"

namespace tnbc::tools::report {

Section text_section(const std::string& key, const std::string& title, const std::string& text) {
  const std::string html = "<pre class=\"section\">" + html_escape(text) + "</pre>";
  return {key, title, text, "", text.empty() ? std::string() : html};
}

}  // namespace tnbc::tools::report
