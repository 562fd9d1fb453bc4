"""Bytes that are not what Hive 2.3 writes give one clear FilterError naming the job property: never a different
filter, never "no filter". Real bytes come from the oracle (Hive's own serializer); the bad ones are made from
them: truncated at every length, renamed classes, a foreign class id, trailing bytes, garbage."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.decode.kryo import (
    KryoFormatError,
    UnknownClassError,
    decode_filter_expression,
    decode_search_argument,
)
from storage_handler.decode.kryo.layouts import RELEASES
from storage_handler.errors import FilterError
from tests.decode.kryo_oracle import Oracle
from tests.decode.kryo_trees import col, const, fn
from tests.helpers import examples

EXPR_KEY = "hive.io.filter.expr.serialized"
SARG_KEY = "sarg.pushdown"
TREE = fn("and", fn("between", const("boolean", "false"), col("date", "d"), const("date", "2020-01-01"),
                    const("date", "2020-02-01")),
          fn("in", col("string", "s"), const("string", "a"), const("string", "b")),
          fn("<", col("timestamp", "ts"), const("timestamp", "2024-01-02 10:11:12.5")))


@pytest.fixture(scope="module")
def expression_bytes(kryo_oracle: Oracle) -> bytes:
    return base64.b64decode(kryo_oracle.expression(TREE)[0])


@pytest.fixture(scope="module")
def sarg_bytes(kryo_oracle: Oracle) -> bytes:
    return base64.b64decode(kryo_oracle.sarg_pushdown(TREE)[0])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def kryo_name(name: str) -> bytes:
    """A class name as Kryo 4's ``writeString`` writes it."""
    if 1 < len(name) < 64 and name.isascii():
        return name[:-1].encode("ascii") + bytes([ord(name[-1]) | 0x80])
    raw = name.encode("utf-8")
    count = len(name) + 1
    head = bytes([(count & 0x3F) | 0x80 | (0x40 if count > 0x3F else 0)])
    return head + (bytes([count >> 6]) if count > 0x3F else b"") + raw


def renamed(data: bytes, old: str, new: str) -> bytes:
    assert data.count(kryo_name(old)) == 1, old
    return data.replace(kryo_name(old), kryo_name(new))


def test_the_real_bytes_decode(expression_bytes: bytes, sarg_bytes: bytes) -> None:
    assert "LESS_THAN ts 2024-01-02 10:11:12.5" in str(decode_search_argument(b64(sarg_bytes)))
    assert decode_filter_expression(b64(expression_bytes)).function == "and"


def test_every_truncation_is_an_error_naming_the_property(expression_bytes: bytes, sarg_bytes: bytes) -> None:
    for cut in range(len(expression_bytes)):
        with pytest.raises(KryoFormatError, match=f"job property '{EXPR_KEY}'"):
            decode_filter_expression(b64(expression_bytes[:cut]))
    for cut in range(len(sarg_bytes)):
        with pytest.raises(KryoFormatError, match=f"job property '{SARG_KEY}'"):
            decode_search_argument(b64(sarg_bytes[:cut]))


def test_trailing_bytes_are_an_error(expression_bytes: bytes) -> None:
    with pytest.raises(KryoFormatError, match="bytes are left"):
        decode_filter_expression(b64(expression_bytes + b"\x00"))


def test_a_class_hive_never_writes_in_a_filter(expression_bytes: bytes) -> None:
    bad = renamed(expression_bytes, "org.apache.hadoop.hive.ql.plan.ExprNodeColumnDesc",
                  "org.apache.hadoop.hive.ql.plan.ExprNodeDynamicValueDesc")
    with pytest.raises(UnknownClassError, match=f"'{EXPR_KEY}'.*ExprNodeDynamicValueDesc is not one this decoder"):
        decode_filter_expression(b64(bad))
    bad = renamed(expression_bytes, "java.util.ArrayList", "java.util.HashMap")
    with pytest.raises(UnknownClassError, match="java.util.HashMap is not part of a filter"):
        decode_filter_expression(b64(bad))


def test_a_class_of_a_newer_hive_is_reported_as_such(expression_bytes: bytes) -> None:
    bad = renamed(expression_bytes, "org.apache.hadoop.hive.serde2.io.DateWritable",
                  "org.apache.hadoop.hive.serde2.io.DateWritableV2")
    with pytest.raises(UnknownClassError, match="written by a newer Hive than 2.3"):
        decode_filter_expression(b64(bad))


@pytest.mark.parametrize("class_id", [12, 14, 31, 40, 1000])
def test_a_class_id_of_another_hive_or_kryo_version(expression_bytes: bytes, class_id: int) -> None:
    """The first field (the children list) is written by name in Hive 2.3.10; a registered id there means other
    registrations: Hive 3 registers more classes, Hive 4 another Kryo."""
    assert expression_bytes[:3] == b"\x01\x01\x00"
    code = class_id + 2
    varint = bytes([code]) if code < 0x80 else bytes([code & 0x7F | 0x80, code >> 7])
    with pytest.raises(UnknownClassError, match=f"class id {class_id} .*different Hive"):
        decode_filter_expression(b64(b"\x01" + varint + expression_bytes[3:]))


def test_an_unknown_function_class(kryo_oracle: Oracle) -> None:
    tree = fn("=", fn("datediff", col("string", "s"), const("string", "2020-01-01")), const("int", "3"))
    answer = kryo_oracle.expression(tree)
    assert "org.apache.hadoop.hive.ql.udf.generic.GenericUDFDateDiff" not in RELEASES["2.3.10"].fields
    with pytest.raises(UnknownClassError, match=f"'{EXPR_KEY}'.*GenericUDFDateDiff is not one this decoder knows"):
        decode_filter_expression(answer[0])


def test_the_wrong_kind_of_bytes_for_the_property(expression_bytes: bytes, sarg_bytes: bytes) -> None:
    with pytest.raises(FilterError, match=f"'{EXPR_KEY}'"):
        decode_filter_expression(b64(sarg_bytes))
    with pytest.raises(FilterError, match=f"'{SARG_KEY}'"):
        decode_search_argument(b64(expression_bytes))


@pytest.mark.parametrize("text", ["", "   ", "%%%%", "AQEA!!", "{\"format\": 1}", "AQ=A"])
def test_not_base64(text: str) -> None:
    with pytest.raises(KryoFormatError, match=f"job property '{EXPR_KEY}'.*(not base64|empty)"):
        decode_filter_expression(text)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.binary(min_size=1, max_size=300))
def test_garbage_is_always_an_error(data: bytes) -> None:
    for decode, key in ((decode_filter_expression, EXPR_KEY), (decode_search_argument, SARG_KEY)):
        with pytest.raises(FilterError, match=f"'{key}'"):
            decode(b64(data))


def nested(depth: int) -> dict:
    tree = fn("=", col("int", "x"), const("int", "1"))
    for i in range(depth):  # alternating AND/OR: Hive flattens a chain of one kind, so this is how filters nest
        tree = fn("and" if i % 2 else "or", tree, fn("=", col("int", "y"), const("int", str(i))))
    return tree


def test_deep_nesting_decodes_to_a_bound_then_is_a_clear_error(kryo_oracle: Oracle) -> None:
    """Kryo's format is recursive, and so is this reader: 150 levels of alternating AND/OR decode; far deeper
    bytes (corrupt, or a machine-made filter) are refused with an error, not a crash."""
    assert decode_filter_expression(kryo_oracle.expression(nested(150))[0]).function == "and"
    with pytest.raises(KryoFormatError, match=f"'{EXPR_KEY}'.*nested too deeply"):
        decode_filter_expression(kryo_oracle.expression(nested(400))[0])


def test_an_expression_node_that_is_its_own_child_is_an_error() -> None:
    """Kryo lets a reference name an object still being read: an AND listing itself as its child (hand-written
    bytes, plain Kryo) made the tree rebuild loop without end, growing its stack until memory ran out."""
    tree, array = "org.apache.hadoop.hive.ql.io.sarg.ExpressionTree", "java.util.ArrayList"
    data = (b"\x01"                                       # SearchArgumentImpl, reference 0
            + b"\x01\x00" + kryo_name(tree) + b"\x01"      # compactExpression: a new ExpressionTree, reference 1
            + b"\x01\x01" + kryo_name(array) + b"\x01\x01"  # its children: a new ArrayList of one element
            + b"\x01\x00" + b"\x03"                        # ... that element: reference 1, itself
            + b"\x00\x00" + b"\x01\x02"                     # no constant, no leaf; operator AND
            + b"\x01\x01" + b"\x01\x00"                     # leaves: a new empty ArrayList
            + b"\x01\x00" + b"\x03")                       # normalizedExpression: reference 1
    with pytest.raises(FilterError, match="its own descendant"):
        decode_search_argument(b64(data))
