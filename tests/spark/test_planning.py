"""The prune service's answer text, built from the kept files' columns, reads exactly as the row form."""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.catalog import ScanFiles
from storage_handler.input_format import FileStatus
from storage_handler.spark.planning import columnar_rows_json, file_rows, file_rows_json
from tests.helpers import examples

# "." and ".." name no file (a listing never returns them, and a location refuses them)
NAMES = st.text(st.sampled_from(list('ab é"\\\n\t%:=/_.') + ["\u2028", "😀"]), min_size=1, max_size=8).filter(
    lambda n: n.replace("/", "_") not in (".", ".."))
FOLDERS = st.sampled_from(["d=1/", "d=a b/", "", "/elsewhere/x/", "s3a://other/k/", 'q="x"/'])
VALUES = st.sampled_from([None, "1", 'a"b', "é", "x\\y"])
LOCATIONS = st.sampled_from(["/work/t", "file:/work/t", "file:///work/t/", "/", "s3a://bucket", "s3a://bucket/t"])


def kept_of(rows: list[tuple[str, int, int, str | None]]) -> ScanFiles:
    partitions = tuple(dict.fromkeys((("d", v),) for *_, v in rows))
    batch = pa.table({
        "path": pa.array([r[0] for r in rows], pa.string()), "size": pa.array([r[1] for r in rows], pa.int64()),
        "modification_time": pa.array([r[2] for r in rows], pa.int64()),
    })
    return ScanFiles(batch, pa.array([partitions.index((("d", r[3]),)) for r in rows], pa.int32()), partitions)


@settings(max_examples=examples(300), deadline=None)
@given(LOCATIONS, st.lists(st.tuples(FOLDERS, NAMES, st.integers(0, 1 << 40), st.integers(0, 1 << 42), VALUES),
                           max_size=12))
def test_answer_text_reads_as_the_row_form(location: str, files: list) -> None:  # noqa: ANN001
    rows = [(folder + name.replace("/", "_"), size, mtime, value) for folder, name, size, mtime, value in files]
    kept = kept_of(rows)
    statuses = [FileStatus(path, size, mtime, (("d", value),)) for path, size, mtime, value in rows]
    expected = json.loads(json.dumps(file_rows(location, statuses)))
    for text in (file_rows_json(location, kept), columnar_rows_json(location, kept)):  # few files, and many
        assert "\n" not in text  # one answer, one line
        assert json.loads(text) == expected
