"""FileList: a table's files as columns that behaves exactly like the list of DataFile it replaces."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.errors import DatasetError
from storage_handler.stats import DataFile, FileList, list_data_files
from storage_handler.stats.files.file_list import FileListBuilder, concat
from tests.stats.util import write

MAPPINGS = [{}, {"dt": "1"}, {"dt": None}, {"dt": "2", "h": "é"}]
paths = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
data_files = st.builds(
    DataFile, paths, st.integers(0, 2**62), st.integers(-(2**62), 2**62),
    st.sampled_from(MAPPINGS), st.none() | st.text(max_size=8))


@given(st.lists(data_files, max_size=40), st.integers(-45, 45), st.integers(-45, 45), st.integers(1, 3))
def test_behaves_as_the_list(files: list[DataFile], start: int, stop: int, step: int) -> None:
    listed = FileList.of(files)
    assert len(listed) == len(files)
    assert list(listed) == files and listed == files and files == listed
    assert listed[start:stop:step] == files[start:stop:step]
    for i in range(-len(files), len(files)):
        assert listed[i] == files[i]
    assert listed.total_size == sum(f.size for f in files)
    assert list(listed.sorted_by_path()) == sorted(files, key=lambda f: f.path.encode())
    mask = np.array([f.size % 2 == 0 for f in files], dtype=bool)
    assert list(listed.filter(mask)) == [f for f, m in zip(files, mask, strict=True) if m]
    assert list(listed + files[:3]) == files + files[:3]
    assert pickle.loads(pickle.dumps(listed[start:stop])) == files[start:stop]
    assert listed.has_duplicate_paths() == (len({f.path for f in files}) < len(files))
    assert listed.sorted_by_path().has_duplicate_paths() == listed.has_duplicate_paths()


def test_mappings_are_shared_not_copied() -> None:
    one = {"dt": "1"}
    listed = FileList.of([DataFile("a", 1, 1, one), DataFile("b", 2, 2, one), DataFile("c", 3, 3, {"dt": "1"})])
    assert listed[0].partition_values is listed[1].partition_values is one
    assert len(listed.partitions) == 2  # by mapping object: equal mappings of two folders stay two slots
    assert [(m, i) for m, i in listed.slot_members()] == [(one, 0), ({"dt": "1"}, 2)]


def test_a_slice_pickles_only_its_files() -> None:
    listed = FileList.of([DataFile(f"dt=1/part-{i:06d}.parquet", i, i, MAPPINGS[1], "v") for i in range(20_000)])
    assert len(pickle.dumps(listed[:10])) < 2_000 < len(pickle.dumps(listed))


def test_concat_keeps_each_lists_mappings() -> None:
    a = FileList.of([DataFile("x", 1, 1, {"k": "a"})])
    b = FileList.of([DataFile("y", 2, 2, {"k": "b"}), DataFile("z", 3, 3, {"k": "c"})])
    assert list(concat([a, FileList.empty(), b])) == list(a) + list(b)
    assert concat([]) == []


def test_builder_batches_strings_in_arrow() -> None:
    builder = FileListBuilder()
    slot = builder.slot_for({"dt": "1"})
    for i in range(70_000):  # many batches
        builder.add(f"dt=1/{i:08d}", i, 2 * i, None if i % 7 else str(i), slot)
    listed = builder.build()
    assert len(listed) == 70_000 and isinstance(listed.paths, pa.StringArray)
    assert listed[69_999] == DataFile("dt=1/00069999", 69_999, 139_998, {"dt": "1"}, None)
    assert listed[7].version == "7"


def test_list_data_files_is_columnar_and_sorted(tmp_path: Path) -> None:
    for d in (2, 10, 1):
        for j in (3, 1):
            write(tmp_path / f"dt={d}", f"part-{j}.parquet", pa.table({"x": [d]}))
    files = list_data_files(str(tmp_path), ["dt"])
    assert isinstance(files, FileList)
    assert [f.path for f in files] == sorted(f"dt={d}/part-{j}.parquet" for d in (1, 2, 10) for j in (1, 3))
    assert [f.partition_values for f in files][::2] == [{"dt": "1"}, {"dt": "10"}, {"dt": "2"}]
    assert len(files.partitions) == 3  # one mapping per folder


def test_a_name_that_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "dt=1").mkdir()
    with open(os.fsencode(tmp_path / "dt=1") + b"/\xff.parquet", "wb") as fh:
        fh.write(b"PAR1")
    with pytest.raises(DatasetError, match=r"named b'dt=1/\\xff.parquet', which is not UTF-8"):
        list_data_files(str(tmp_path), ["dt"])
