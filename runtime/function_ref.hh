// A non-owning reference to a callable (no allocation, unlike std::function): for callbacks that
// never outlive the call that receives them, e.g. the blocking PMPI_* call an entry point hands
// the engine, or the condition a driving loop waits for.
#pragma once

#include <type_traits>
#include <utility>

namespace tnbc {

template <class Sig>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit, like a function pointer
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...); }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace tnbc
