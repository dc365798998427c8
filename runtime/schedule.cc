#include "runtime/schedule.hh"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tnbc {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0); }
}  // namespace

std::size_t piece_limit(std::size_t length, std::size_t page, PieceSetting setting) {
  if (setting && *setting == 0) return SIZE_MAX;
  if (setting) return std::max(page, static_cast<std::size_t>(std::min<std::uint64_t>(*setting, SIZE_MAX)) / page * page);
  return std::max(ceil_div(kAutoPieceMinBytes, page) * page, length / kAutoPiecesPerSub / page * page);
}

std::size_t piece_limit(std::size_t length, std::size_t page, const PieceRule& rule) {
  if (rule.setting || rule.scale_bytes <= 0) return piece_limit(length, page, rule.setting);
  const double k = std::floor(std::sqrt(static_cast<double>(length) / rule.scale_bytes) + 0.5);
  if (k < 2) return SIZE_MAX;
  const auto per_piece = static_cast<std::size_t>(std::ceil(static_cast<double>(length) / k));
  return std::max(page, ceil_div(per_piece, page) * page);
}

std::vector<std::size_t> body_cuts(std::size_t begin, std::size_t end, std::size_t page, std::size_t limit,
                                   std::size_t max_pieces) {
  std::vector<std::size_t> cuts;
  if (end <= begin || limit == SIZE_MAX) return cuts;
  const std::size_t pages = ceil_div(end - begin, page);       // the last one may be partial
  const std::size_t limit_pages = std::max<std::size_t>(1, limit / page);
  const std::size_t count = std::clamp<std::size_t>(ceil_div(pages, limit_pages), 1, std::max<std::size_t>(1, max_pieces));
  const std::size_t step = ceil_div(pages, count) * page;      // <= limit unless max_pieces forbids it
  for (std::size_t at = begin + step; at < end; at += step) cuts.push_back(at);
  return cuts;
}

std::vector<std::size_t> split_points(std::size_t length, std::size_t page, std::size_t limit) {
  if (length <= 2 * page) return {0, length};
  std::vector<std::size_t> cuts{0, page};
  for (std::size_t c : body_cuts(page, length - page, page, limit)) cuts.push_back(c);
  cuts.push_back(length - page);
  cuts.push_back(length);
  return cuts;
}

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "receive";
    case StepKind::Copy: return "copy";
    case StepKind::Put: return "put";
    case StepKind::Flag: return "flag";
    case StepKind::Handoff: return "hand-off";
    case StepKind::Await: return "await";
  }
  return "?";
}

int Schedule::add(const Step& s, std::initializer_list<int> after) {
  return add(s, std::span<const int>(after.begin(), after.size()));
}

int Schedule::add(const Step& s, std::span<const int> after) {
  const int index = static_cast<int>(steps_.size());
  steps_.push_back(s);
  for (int d : after)
    if (d >= 0 && d < index) deps_.push_back(d);  // only earlier steps: the graph stays acyclic
  first_dep_.push_back(static_cast<std::uint32_t>(deps_.size()));
  return index;
}

std::size_t Schedule::count(StepKind k) const {
  return static_cast<std::size_t>(std::count_if(steps_.begin(), steps_.end(), [&](const Step& s) { return s.kind == k; }));
}

}  // namespace tnbc

namespace tnbc {
std::size_t Schedule::landing_with_bytes() const {
  return static_cast<std::size_t>(
      std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return lands(s.kind) && s.length > 0; }));
}
}  // namespace tnbc
