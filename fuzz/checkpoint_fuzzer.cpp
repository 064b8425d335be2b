// safetensors checkpoints: the input is <out>/checkpoint.safetensors, read by
// load_checkpoint (every driver's --resume goes through it, and rnnsearch's
// --translate), then its tensors restored into a model-shaped target list and
// its metadata read as the trainer reads its checkpoint.
#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/train/training_progress.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rg::fuzz::write_input("checkpoint.safetensors", data, size);
  rg::fuzz::expect_clean([&] {
    rg::Checkpoint checkpoint = rg::load_checkpoint(path);
    rg::read_training_progress(checkpoint.metadata, path);
    rg::restore_tensors(checkpoint, "param.", {{"w", rg::Tensor::zeros(rg::Shape{2, 3})}});
  });
  return 0;
}
