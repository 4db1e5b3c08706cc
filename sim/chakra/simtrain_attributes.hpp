#pragma once
// What simtrain writes into its Chakra traces beyond Chakra's own fields, so
// that importing them gives back the Program that was exported (ASTRA-sim and
// Chakra's tools skip attributes they do not know). Each names its value.
namespace simtrain::chakra_attributes {

// GlobalMetadata: the Program's layout, and this file's rank in it.
inline constexpr const char* kProgramHash = "simtrain_program_hash";      // string
inline constexpr const char* kTensorSize = "simtrain_tensor_size";        // int64
inline constexpr const char* kPipelineSize = "simtrain_pipeline_size";    // int64
inline constexpr const char* kRankCoord = "simtrain_rank_coord";          // string "tp dp pp"
// string: how comm_size counts bytes (comm_size.hpp); absent in exports made
// before it (issue 42), whose all-gathers hold the gathered output.
inline constexpr const char* kCommSize = "simtrain_comm_size";
inline constexpr const char* kCommSizeAsAstraSim = "as ASTRA-sim reads it";

// Node: what Chakra's node types do not say.
inline constexpr const char* kKind = "simtrain_kind";                // string, to_string(TaskKind): "F", "OPT" ...
inline constexpr const char* kStream = "simtrain_stream";            // string, to_string(Stream)
inline constexpr const char* kDim = "simtrain_dim";                  // string, to_string(CommDim), communication only
inline constexpr const char* kJoinsBatch = "simtrain_joins_batch";   // bool, SEND/RECV issued with the one before
inline constexpr const char* kRepeatOf = "simtrain_repeat_of";       // uint64: the node of the task it repeats

}  // namespace simtrain::chakra_attributes
