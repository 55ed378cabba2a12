// tests/fake_device.h — an H200's description (sm_90, 132 SMs, 60 MB L2, 227 KB of shared memory
// per block) for the CPU tests of supports() and the picks: nothing in it touches a GPU.
#pragma once
#include "kl/device.h"

namespace kl::test {

inline DeviceInfo fake_h200() {
  DeviceInfo d;
  d.name = "fake H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sms = 132;
  d.l2_bytes = 60LL << 20;
  d.smem_optin = 227 * 1024;
  d.smem_per_sm = 228 * 1024;
  return d;
}

}  // namespace kl::test
