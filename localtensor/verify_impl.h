/* localtensor/verify_impl.h — what the verifier allocates (internal: not
 * installed), for the executor's up-front memory check. */
#ifndef LT_VERIFY_IMPL_H
#define LT_VERIFY_IMPL_H

#include <stdint.h>

#include "kernels/status_impl.h"
#include "localtensor/spec.h"

/* Bytes lt_verify_reshard of a source of spec src against a state of spec
 * dst allocates at most besides the two DTensors: the source's owner tables,
 * one shard's index lists and, where values are reduced or divided, two
 * shards of dst. *out saturates. */
lt_status lt__verify_bytes(const lt_spec *src, const lt_spec *dst, uint64_t *out);

#endif
