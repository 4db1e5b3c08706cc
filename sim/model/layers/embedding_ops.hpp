#pragma once
// The model units around the layers, as one TP rank runs them: the
// vocabulary-parallel input embedding (first pipeline stage) and the head
// (last stage: final norm, output layer, vocabulary-parallel cross-entropy).
#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

UnitWork embedding_work(const Shard& x);
UnitWork head_work(const Shard& x);

}  // namespace simtrain::layers
