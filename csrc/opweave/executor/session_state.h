// SessionState: what stateful ops keep between runs of one session (variable values, random
// generator positions), one entry per node name. The Executor of a Session owns it, so two
// sessions on one graph hold separate state, as in TensorFlow; kernels compiled for different
// run signatures of the same session find the same entry by the node's name.
//
//   auto counter = ctx.state->get_or_create<std::atomic<int>>(ctx.node.name, [] {
//     return std::make_shared<std::atomic<int>>(0);
//   });
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>

#include "opweave/errors.h"

namespace opweave {

class SessionState {
 public:
  // The entry called `key`, created by `make` on first use. Thread-safe: concurrent runs asking
  // for the same key get the same object (make runs at most once per key). Throws
  // OpError(kInternal) when the entry exists with another type.
  template <typename T>
  std::shared_ptr<T> get_or_create(const std::string& key,
                                   const std::function<std::shared_ptr<T>()>& make) {
    // One lock for lookups and creation: entries are made once per key per session, never on a
    // hot path after the first run, and `make` only allocates (it never runs a graph).
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entries_[key];
    if (!e.value) {
      e.value = make();
      e.type = &typeid(T);
    } else if (*e.type != typeid(T)) {
      throw OpError(ErrorCode::kInternal, "session state '" + key + "' has another type");
    }
    return std::static_pointer_cast<T>(e.value);
  }

  // The entry called `key`, or null. Thread-safe.
  template <typename T>
  std::shared_ptr<T> find(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mutex_);  // guards entries_ against a concurrent insert
    auto it = entries_.find(key);
    if (it == entries_.end() || *it->second.type != typeid(T)) return nullptr;
    return std::static_pointer_cast<T>(it->second.value);
  }

  // Visits every entry of type T (e.g. to list variables). Thread-safe; fn must not call back
  // into this object.
  template <typename T>
  void for_each(const std::function<void(const std::string&, T&)>& fn) const {
    std::lock_guard<std::mutex> lock(mutex_);  // guards entries_ against a concurrent insert
    for (const auto& [key, e] : entries_) {
      if (*e.type == typeid(T)) fn(key, *static_cast<T*>(e.value.get()));
    }
  }

 private:
  struct Entry {
    std::shared_ptr<void> value;
    const std::type_info* type = nullptr;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace opweave
