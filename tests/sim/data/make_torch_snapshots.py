"""Writes small PyTorch memory snapshots, as torch.cuda.memory._dump_snapshot
writes them (a pickled dict of segments, device_traces and allocator_settings),
for dwsr's tests and the pickle reader's fuzz corpus.

    python3 make_torch_snapshots.py OUTDIR

writes NAME.p2.pickle and NAME.p4.pickle (pickle protocols 2 and 4) and
NAME.json (the same dict as JSON) for each snapshot below. Only the standard
library is used. The expected numbers are worked out in the tests that read
these files.
"""
import json
import os
import pickle
import sys

MiB = 1 << 20
FRAMES = [{"filename": "train.py", "line": 12, "name": "forward"}]  # shared, as PyTorch shares frames


def entry(action, addr, size, stream=0, device_free=None):
    e = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": 1, "frames": FRAMES}
    if action == "oom":
        del e["addr"]
        e["device_free"] = device_free
    return e


def free(addr, size, stream=0):
    return [entry("free_requested", addr, size, stream), entry("free_completed", addr, size, stream)]


def segment(address, total, blocks, large=True, pool=(0, 0)):
    return {"device": 0, "address": address, "total_size": total, "stream": 0,
            "segment_type": "large" if large else "small", "segment_pool_id": pool, "is_expandable": False,
            "frames": [], "blocks": [{"address": a, "size": s, "requested_size": r, "state": st, "frames": FRAMES}
                                     for a, s, r, st in blocks]}


SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "roundup_power2_divisions": {"1": 0, "2": 0}}

# Recording began mid-run: blocks live before it (freed in the trace, or live
# throughout), segments from before it, a release of the cache, and an OOM.
S1, S2, S3, S4 = 0x10000000, 0x20000000, 0x30000000, 0x40000000
late_start = {
    "segments": [segment(S1, 20 * MiB, [(S1, 4 * MiB, 4 * MiB, "active_allocated"),
                                        (S1 + 4 * MiB, 8 * MiB, 8 * MiB, "active_allocated"),
                                        (S1 + 12 * MiB, 8 * MiB, 0, "inactive")])],
    "device_traces": [free(S1 + 4 * MiB, 3 * MiB) + free(S2, 1000) + free(S4, 19 * MiB + 512 * 1024) + [
        entry("alloc", S1 + 4 * MiB, 8 * MiB),
        entry("segment_alloc", S3, 40 * MiB), entry("alloc", S3, 40 * MiB)] + free(S3, 40 * MiB) + [
        entry("segment_free", S3, 40 * MiB), entry("segment_free", S2, 2 * MiB), entry("segment_free", S4, 20 * MiB),
        entry("oom", 0, 100 * MiB, device_free=70 * MiB)]],
    "allocator_settings": SETTINGS,
}

# Recorded from the start; the third allocation raised OutOfMemoryError.
A = 0x7f0000000000
what_if = {
    "segments": [segment(A, 100 * MiB, [(A, 50 * MiB, 50 * MiB, "active_allocated"),
                                        (A + 50 * MiB, 50 * MiB, 0, "inactive")])],
    "device_traces": [[entry("segment_alloc", A, 100 * MiB), entry("alloc", A, 100 * MiB)] + free(A, 100 * MiB) + [
        entry("alloc", A, 50 * MiB), entry("oom", 0, 60 * MiB, device_free=30 * MiB)]],
    "allocator_settings": SETTINGS,
}

# What dwsr does not model: a second stream, a free completed later, a private pool.
X = 0x50000000
streams = {
    "segments": [segment(X, 20 * MiB, [(X, 4 * MiB, 0, "inactive"), (X + 4 * MiB, 2 * MiB, 2 * MiB, "active_allocated"),
                                       (X + 6 * MiB, 14 * MiB, 0, "inactive")], pool=(1, 0))],
    "device_traces": [[entry("segment_alloc", X, 20 * MiB), entry("alloc", X, 2 * MiB),
                       entry("alloc", X + 2 * MiB, 2 * MiB, stream=7), entry("free_requested", X, 2 * MiB),
                       entry("alloc", X + 4 * MiB, 2 * MiB), entry("free_completed", X, 2 * MiB)] +
                      free(X + 2 * MiB, 2 * MiB, stream=7)],
    "allocator_settings": SETTINGS,
}

SNAPSHOTS = {"late_start": late_start, "what_if": what_if, "streams": streams}

if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, snap in SNAPSHOTS.items():
        for protocol in (2, 4):
            with open(os.path.join(out, f"{name}.p{protocol}.pickle"), "wb") as f:
                pickle.dump(snap, f, protocol=protocol)
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            json.dump(snap, f)
