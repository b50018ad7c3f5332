#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Data-parallel SGD over MPI, the way a bucketed DDP trains: every rank
computes its gradient of one shared model, the gradients are summed with
MPI_Allreduce every step (in one buffer or in buckets), and every rank takes
the same step.  Used by tests/mpi/t-mpi-train.sh (a training job must never
hang: issue 20) and bench/training.sh (steps/s over efi against TCP).

The model is a quadratic: rank r holds a target t_r and curvature a_r, its
minibatch gradient is a_r * (w - t_r) plus seeded noise, so the work per
step is O(params) and the step time is the all-reduce's, as in
communication-bound training.  Everything is seeded: two runs with the same
arguments compute the same loss curve bit for bit, whatever carries the
bytes (a sum of two float32 values does not depend on the order), which is
how a transport that corrupts or drops data is caught.

    mpirun -np N train.py --params P [--bucket-mb B] [--steps S] [--seed K]

Prints one line "STEP i loss" every --print-every steps, then
"RESULT steps=S params=P buckets=N seconds=T steps_per_s=R loss=L digest=D"
where D is a hash of the whole loss curve.  Exit 1 if a check fails (the
ranks' models differ, a loss is not finite) or a step takes longer than
--stall-seconds (a hang: each rank prints its Python stack, "Timeout").
"""
import argparse
import faulthandler
import hashlib
import sys
import time

import numpy as np
from mpi4py import MPI


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", type=int, default=1_000_000)
    ap.add_argument("--bucket-mb", type=float, default=0.0,
                    help="all-reduce in buckets of this many MB (0: one buffer)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3, help="steps not timed")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--print-every", type=int, default=10)
    ap.add_argument("--stall-seconds", type=float, default=120,
                    help="a step that takes longer is a hang: the rank prints where it is "
                         "(faulthandler: 'Timeout') and exits (0: wait for ever)")
    args = ap.parse_args()
    if args.params < 1 or args.steps < 1 or args.warmup < 0 or args.bucket_mb < 0:
        ap.error("--params and --steps must be positive, --warmup and --bucket-mb not negative")

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    p = args.params
    rng = np.random.default_rng(args.seed * 1000 + rank)
    target = rng.standard_normal(p, dtype=np.float32)
    curv = (0.5 + rng.random(p, dtype=np.float32)).astype(np.float32)
    w = np.zeros(p, dtype=np.float32)
    grad = np.empty(p, dtype=np.float32)
    total = np.empty(p, dtype=np.float32)
    if args.bucket_mb > 0:
        per = max(1, int(args.bucket_mb * 1e6) // 4)
        buckets = [(i, min(p, i + per)) for i in range(0, p, per)]
    else:
        buckets = [(0, p)]
    noise_rng = np.random.default_rng(args.seed * 7919 + rank)
    curve = hashlib.sha256()
    loss = float("nan")
    t0 = None
    for step in range(args.steps + args.warmup):
        if args.stall_seconds > 0:
            faulthandler.dump_traceback_later(args.stall_seconds, exit=True)
        if step == args.warmup:
            comm.Barrier()
            t0 = time.perf_counter()
        diff = w - target
        np.multiply(curv, diff, out=grad)
        grad += 0.01 * noise_rng.standard_normal(p, dtype=np.float32)
        local = np.array([0.5 * float(np.dot(curv * diff, diff)) / p])
        # as DDP does, bucket by bucket (the last layers' first)
        for lo, hi in reversed(buckets):
            comm.Allreduce(grad[lo:hi], total[lo:hi], op=MPI.SUM)
        losses = np.empty(1)
        comm.Allreduce(local, losses, op=MPI.SUM)
        loss = losses[0] / size
        if not np.isfinite(loss):
            print(f"FAIL: loss {loss} at step {step}", flush=True)
            return 1
        w -= (args.lr / size) * total
        curve.update(np.float64(loss).tobytes())
        if args.print_every and step % args.print_every == 0 and rank == 0:
            print(f"STEP {step} {loss:.9g}", flush=True)
    faulthandler.cancel_dump_traceback_later()
    elapsed = time.perf_counter() - t0 if t0 is not None else float("nan")
    # every rank must hold the same model: compare a digest of w
    mine = hashlib.sha256(w.tobytes()).digest()
    theirs = comm.allgather(mine)
    if any(d != mine for d in theirs):
        print(f"FAIL: rank {rank}: the ranks' models differ after {args.steps} steps", flush=True)
        return 1
    if rank == 0:
        print(f"RESULT steps={args.steps} params={p} buckets={len(buckets)} seconds={elapsed:.3f} "
              f"steps_per_s={args.steps / elapsed:.3f} loss={loss:.9g} digest={curve.hexdigest()[:16]}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
