// The consumer project's own core/tensor.h, on its include path on purpose:
// rmsgrad's headers include theirs as "rmsgrad/core/tensor.h", so this file
// must never be picked up in their place (it would stop the build).
#pragma once
#error "rmsgrad included the consumer's core/tensor.h instead of its own"
