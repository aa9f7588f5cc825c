/* gradckpt/gradckpt.h - umbrella header: includes every public gradckpt header. */
#ifndef GRADCKPT_GRADCKPT_H
#define GRADCKPT_GRADCKPT_H

#include <gradckpt/export.h>
#include <gradckpt/version.h>
#include <gradckpt/status.h>
#include <gradckpt/isa.h>
#include <gradckpt/kernels.h>
#include <gradckpt/tensors.h>
#include <gradckpt/dtype.h>
#include <gradckpt/checkpoint.h>
#include <gradckpt/checkpointer.h>
#include <gradckpt/reduction.h>
#include <gradckpt/snapshot.h>
#include <gradckpt/manager.h>
#include <gradckpt/store.h>

#endif /* GRADCKPT_GRADCKPT_H */
