// What each opaque handle of the C API holds: the C++ object it stands for,
// plus the strings and errors it hands out (owned by the handle, so their
// pointers stay valid as long as it lives).
#pragma once

#include "capi/handles.h"

#include "hotlink/cache.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/cache_entry.h"
#include "hotlink/hot_module.h"
#include "hotlink/load.h"

#include <memory>
#include <string>
#include <vector>

struct hotlink_cache {
  std::shared_ptr<hotlink::cache::Cache> cache;
};

struct hotlink_service {
  std::unique_ptr<hotlink::LinkService> service;
};

struct hotlink_request {
  hotlink::LinkRequest request;
  bool broken = false;  // a setter ran out of memory: hotlink_link says so
  std::string invalid;  // a setter was given a value it cannot take
};

struct hotlink_result {
  hotlink::LinkResult result;
  std::unique_ptr<hotlink_error> error; // result.error, in the C form

  // Makes `error` from result.error; called once the result is final.
  void finish() {
    if (result.error)
      error.reset(hotlink::capi::new_error(*result.error));
  }
};

struct hotlink_build {
  hotlink::cache::Artifact artifact;
  bool has_artifact = false;
  std::optional<hotlink::Error> failure; // hotlink_build_fail or a failed result
  bool broken = false;
};

struct hotlink_entry {
  hotlink::cache::Entry entry;
  bool hit = false;
  std::vector<hotlink::signature::PublicKey> trust; // the cache's, for loading
};

struct hotlink_library {
  std::unique_ptr<hotlink::loader::Library> library;
};

struct hotlink_module {
  hotlink::loader::HotModule module;
};
