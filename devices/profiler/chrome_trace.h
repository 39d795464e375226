// Chrome trace JSON (the "JSON Array/Object Format" Perfetto and chrome://tracing read) of
// recorded device timelines: a process per device with its name, a thread per lane (the
// known units first: Steps, MXU, VPU, DMA, ICI; other lanes after, in order of first use),
// and a complete event ("ph": "X") per slice, times in microseconds.
//
//   std::string json = ChromeTraceJson({{.pid = 1, .name = "TPU_1 (TPU v5 lite)",
//                                        .slices = {{.lane = "MXU", .name = "dot.1",
//                                                    .start_us = 0, .duration_us = 3.5}}}});
#pragma once

#include <string>
#include <vector>

#include "jx/devices/profiler/profiler.h"

namespace jx::profiler {

struct DeviceTimeline {
  int pid = 0;
  std::string name;
  std::vector<Slice> slices;
};

std::string ChromeTraceJson(const std::vector<DeviceTimeline>& timelines);

}  // namespace jx::profiler
