/* localtensor/localtensor.h — the umbrella header users include.
 *
 * localtensor simulates every rank of a sharded (DTensor-style) program in one
 * process: a distributed tensor holds one local shard per simulated rank, ops
 * apply per shard, and collectives are computed directly on the shards.
 */
#ifndef LOCALTENSOR_H
#define LOCALTENSOR_H

#include "localtensor/kernels/status.h"
#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/split.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/kernels/math.h"
#include "localtensor/kernels/pool.h"
#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/trace.h"
#include "localtensor/collectives_sim/match.h"
#include "localtensor/collectives_sim/program.h"
#include "localtensor/placement.h"
#include "localtensor/layout.h"
#include "localtensor/spec.h"
#include "localtensor/local.h"
#include "localtensor/random.h"
#include "localtensor/dtensor.h"
#include "localtensor/plan.h"
#include "localtensor/verify.h"
#include "localtensor/redistribute.h"
#include "localtensor/remesh.h"
#include "localtensor/ragged.h"
#include "localtensor/ops.h"
#include "localtensor/reference.h"
#include "localtensor/rank_map.h"
#include "localtensor/tp.h"
#include "localtensor/validate.h"
#include "localtensor/numerics.h"
#include "localtensor/pytorch_bugs.h"

#endif
