"""dwsr.dataset: the arrays dwsr dataset writes, deterministic from the seed,
labels equal to dwsr.plan's, the files, and bad options."""

import json

import numpy as np
import pytest

import dwsr


def test_a_dataset_is_a_function_of_its_seed_and_its_labels_are_the_plans():
    a = dwsr.dataset("peak", 40, seed=3, allocators=["exact", "host_pages"], graphs=8)
    b = dwsr.dataset("peak", 40, seed=3, allocators=["exact", "host_pages"], graphs=8)
    assert a.features.dtype == np.float32 and a.labels.dtype == np.float64 and a.splits.dtype == np.uint8
    assert a.features.shape == (40, len(a.feature_names))
    assert a.labels.shape == (40, 3)
    assert a.label_names == ["peak_requested", "peak_reserved_host_pages", "oom"]
    for name in ("features", "labels", "splits", "graphs"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.features, dwsr.dataset("peak", 40, seed=4, allocators=["exact"], graphs=8).features)

    f = {n: k for k, n in enumerate(a.feature_names)}
    for row in (0, 17, 39):
        x = a.features[row]
        shape = tuple(int(x[f[n]]) for n in ("inlines", "crosslines", "samples"))
        chunk = tuple(int(x[f[n]]) for n in ("chunk_inlines", "chunk_crosslines", "chunk_samples"))
        graph = dwsr.Graph.from_dict(a.columns["graphs"][int(a.graphs[row])])
        for allocator, label in (("exact", 0), ("host_pages", 1)):
            p = dwsr.plan(graph, shape, chunk=chunk, workers=int(x[f["workers"]]), threads=int(x[f["threads"]]),
                          allocator=allocator)
            assert p.peak_bytes == a.labels[row, label]

    train, test = a.split("extrapolation")
    assert (train ^ test).all() and test.any() and train.any()
    with pytest.raises(ValueError, match="expected one of random, family, extrapolation"):
        a.split("nope")


def test_dataset_writes_the_files_and_refuses_bad_options(tmp_path):
    d = dwsr.dataset("pack", 16, seed=1, graphs=4, out=tmp_path / "set", csv=False)
    assert d.graphs.shape == (16, 4)
    assert np.array_equal(np.load(tmp_path / "set" / "features.npy"), d.features)
    assert np.array_equal(np.load(tmp_path / "set" / "labels.npy"), d.labels)
    assert json.loads((tmp_path / "set" / "columns.json").read_text())["task"] == "pack"
    assert not (tmp_path / "set" / "dataset.csv").exists()
    with pytest.raises(dwsr.InvalidInputError, match="expected peak, chunk or pack"):
        dwsr.dataset("bogus", 4)
    with pytest.raises(dwsr.InvalidInputError, match="expected exact or host_pages"):
        dwsr.dataset("chunk", 4, allocators=["rmm_pool"])
    with pytest.raises(dwsr.InvalidInputError, match="0 rows"):
        dwsr.dataset("peak", 0)
