#include "adamw.hpp"

namespace simtrain::reference {

void adamw(std::vector<float>& param, std::vector<float>& m, std::vector<float>& v, const std::vector<float>& grad,
           const math::AdamWConfig& config) {
  const math::AdamWStep step = math::adamw_step(config);
  for (size_t i = 0; i < param.size(); ++i) math::adamw_update(param[i], m[i], v[i], grad[i], step);
}

}  // namespace simtrain::reference
