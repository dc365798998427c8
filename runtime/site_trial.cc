#include "runtime/site_trial.hh"

#include <algorithm>

namespace tnbc {

namespace {

// The trial's k-th call (0 = first): E C C E E C C E ...
bool early_at(std::uint64_t k) { return ((k + 1) / 2) % 2 == 0; }

}  // namespace

int trial_completions(int calls) {
  int c = 0;
  for (int k = 0; k < calls; ++k) c += early_at(static_cast<std::uint64_t>(k)) ? 0 : 1;
  return c;
}

namespace {

long long median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The second trial's start, and the factor after that.
constexpr std::uint64_t kSecondStart = 16, kLaterFactor = 8;

}  // namespace

TrialRule trial_rule(const Settings& s) {
  if (s.mode != Mode::Nbc && s.mode != Mode::Optimize) return {};
  return {static_cast<int>(s.site_trial_calls), static_cast<double>(s.site_trial_margin_pct) / 100.0};
}

std::uint64_t SiteTrial::next_start(std::uint64_t start) {
  return std::max(kSecondStart, start * kLaterFactor);
}

bool TrialTurn::take(const void* site, std::uint64_t& seen) {
  const void* holder = nullptr;
  if (holder_.compare_exchange_strong(holder, site, std::memory_order_acq_rel) || holder == site) return true;
  const std::uint64_t now = ticks_.load(std::memory_order_acquire);
  if (seen != now) {  // first try, or the holder was called since the last: it is in the loop, wait
    seen = now;
    return false;
  }
  holder_.store(site, std::memory_order_release);
  return true;
}

void TrialTurn::tick(const void* site) {
  if (holder_.load(std::memory_order_acquire) == site) ticks_.fetch_add(1, std::memory_order_acq_rel);
}

void TrialTurn::release(const void* site) {
  const void* mine = site;
  holder_.compare_exchange_strong(mine, nullptr, std::memory_order_acq_rel);
}

void SiteTrial::conclude(const TrialRule& rule) {
  if (!early_.empty() && !call_.empty()) {
    ++trials;
    early_ns = median(early_);
    in_call_ns = median(call_);
    const double e = static_cast<double>(early_ns), c = static_cast<double>(in_call_ns);
    const bool slower = c < e * (1.0 - rule.margin);
    in_call = slower || (rule.lean_in_call && !(e < c * (1.0 - rule.margin)));
    leaned = in_call && !slower;
  } else if (rule.lean_in_call) {
    in_call = leaned = true;  // no evidence: the model's sign
  }
  decided_ = true;
  early_.clear();
  call_.clear();
  start_ = next_start(start_);
  active_ = false;
}

TrialRun SiteTrial::enter(std::uint64_t index, long long now_ns, bool eligible, const TrialRule& rule, TrialTurn& turn) {
  if (rule.calls <= 0) return TrialRun::Early;
  if (timing_ && index == last_index_ + 1)
    (last_ == TrialRun::TrialCall ? call_ : early_).push_back(now_ns - last_ns_);
  timing_ = false;
  const auto calls = static_cast<std::uint64_t>(rule.calls);
  if (active_ && index >= start_ + calls) {
    conclude(rule);
    turn.release(this);
  }
  if (active_) turn.tick(this);
  if (!active_ && index >= start_ && eligible && turn.take(this, seen_)) {
    active_ = true;
    start_ = index;
    seen_ = TrialTurn::kNotSeen;
  }
  if (active_ && eligible) {
    last_ = early_at(index - start_) ? TrialRun::Early : TrialRun::TrialCall;
    last_index_ = index;
    last_ns_ = now_ns;
    timing_ = true;
    return last_;
  }
  // Leaning to the call, a site past its warm-up waits for its first trial in the call.
  const bool call = decided_ ? in_call : rule.lean_in_call && index > 0;
  if (!eligible || !call) return TrialRun::Early;
  return decided_ && !leaned ? TrialRun::Verdict : TrialRun::Lean;
}

}  // namespace tnbc
