#pragma once
// The whole batch's rows from every process's share, with a gradient: what a
// loss that compares each example with every other example of the batch needs
// under data parallelism (the order-embedding contrastive loss, CLIP's).
//
//   forward    all = [rows of rank 0; rows of rank 1; …]         [global, D]
//   backward   d local = (Σ over processes of d all)[first : first + rows]
//
// Each process's loss uses all the rows, so every process sends a gradient
// into every row; the owner of a row is the one that must receive their sum,
// which the backward's sum over processes delivers (it is a collective: every
// process runs it, in the same order, as the same model on each does).
#include "rmsgrad/autograd/var.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/dist/process_group.h"

namespace rg::dist {

// local [share.rows, D] → [share.global, D]. With one process, `local` itself.
Var gather_rows(const Var& local, const BatchShare& share, ProcessGroup& group);

}  // namespace rg::dist
