// Whether HloInstructions come from the instruction slab (hlo_instruction_slab.cc) or from
// the heap. Sanitized builds use the heap: AddressSanitizer must see every instruction's own
// new and delete to catch a use after free (a slab slot reused by the next instruction would
// hide it). Tests of the slab's layout ask this before checking addresses.
#pragma once

namespace jx::hlo {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kInstructionsFromSlab = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kInstructionsFromSlab = false;
#else
inline constexpr bool kInstructionsFromSlab = true;
#endif
#else
inline constexpr bool kInstructionsFromSlab = true;
#endif

}  // namespace jx::hlo
