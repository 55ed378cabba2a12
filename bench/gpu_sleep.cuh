// bench/gpu_sleep.cuh — a device-side wait of wall-clock time (%globaltimer, so it does not depend on
// the SM clock), shared by the harness's stream hold and the tests that need a late producer.
#pragma once

namespace kl::bench {

__device__ __forceinline__ void sleep_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace kl::bench
