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

std::vector<std::size_t> split_points(std::size_t length, std::size_t page, const PieceRule& rule) {
  const std::size_t limit = piece_limit(length, page, rule);
  if (rule.setting || limit == SIZE_MAX || length <= 2 * page) return split_points(length, page, limit);
  const std::size_t begin = page, end = length - page;  // the body
  const std::size_t floor_bytes = std::min(limit, ceil_div(kAutoPieceMinBytes, page) * page);
  const std::size_t first = std::max(floor_bytes, (limit >> kRampDoublings) / page * page);
  std::vector<std::size_t> ramp;  // piece sizes of the ramp up (the ramp down mirrors it)
  std::size_t ramped = 0;
  for (std::size_t s = first; 2 * s <= limit && 2 * ramp.size() + 1 < kMaxBodyPieces; s *= 2) {
    ramp.push_back(s);
    ramped += s;
  }
  while (!ramp.empty() && 2 * ramped + limit > end - begin) {
    ramped -= ramp.back();
    ramp.pop_back();
  }
  if (ramp.empty()) return split_points(length, page, limit);
  std::vector<std::size_t> cuts{0, begin};
  std::size_t at = begin;
  for (std::size_t s : ramp) cuts.push_back(at += s);
  // The ramp down, from the end: cuts on page multiples of the sub-message, so the last piece
  // may be up to a page longer than `first` (the body's end need not be a page multiple).
  std::vector<std::size_t> down;
  std::size_t back = 0;
  for (std::size_t s : ramp) down.push_back((end - (back += s)) / page * page);
  for (std::size_t c : body_cuts(at, down.back(), page, limit, kMaxBodyPieces - 2 * ramp.size())) cuts.push_back(c);
  for (auto it = down.rbegin(); it != down.rend(); ++it) cuts.push_back(*it);
  cuts.push_back(end);
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
SendRole Schedule::send_role() const {
  bool receives = false;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    receives = receives || lands(steps_[i].kind);
    if (steps_[i].kind != StepKind::Send) continue;
    for (int d : after(i))
      if (lands(steps_[static_cast<std::size_t>(d)].kind)) return SendRole::Forward;
  }
  return receives ? SendRole::Staged : SendRole::Only;
}

std::size_t Schedule::landing_with_bytes() const {
  return static_cast<std::size_t>(
      std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return lands(s.kind) && s.length > 0; }));
}
}  // namespace tnbc
