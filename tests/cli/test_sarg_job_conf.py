"""``hsh sarg --job-conf FILE``: the SearchArgument a reader makes of job properties Hive wrote (real Hive bytes)."""

from __future__ import annotations

import json
from pathlib import Path

from storage_handler.job_conf import parse_hadoop_xml, parse_properties
from tests.decode.hive_samples import EXPR_TS_LOS_ANGELES, EXPR_X2_UPPER_Y, SARG_X3
from tests.helpers import run_hsh


def _json(*args: str) -> dict:
    proc = run_hsh("sarg", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_pasted_log_lines_and_job_xml(tmp_path: Path) -> None:
    pasted = tmp_path / "from-the-log.properties"
    pasted.write_text(f"# what Hive logged\nhive.io.filter.expr.serialized = {EXPR_X2_UPPER_Y[:60]}\\\n"
                      f"    {EXPR_X2_UPPER_Y[60:]}\nsarg.pushdown={SARG_X3}\n")
    data = _json("--job-conf", str(pasted))
    assert data["old_string"] == "leaf-0 = (EQUALS x 2), expr = leaf-0"
    assert data["sarg_from"] == "hive.io.filter.expr.serialized" and data["not_pushed"] == ["upper(`y`) = 'A'"]

    job_xml = tmp_path / "job.xml"
    job_xml.write_text("<?xml version='1.0'?>\n<configuration>\n"
                       f"<property><name>hive.io.filter.expr.serialized</name><value>{EXPR_TS_LOS_ANGELES}</value>"
                       "</property>\n<property><name>hsh.filter.time.zone</name><value>America/Los_Angeles</value>"
                       "</property>\n</configuration>\n")
    assert _json("--job-conf", str(job_xml))["string"] == "leaf-(LESS_THAN ts 2024-01-02 10:11:12.5)"
    assert _json("--job-conf", str(job_xml), "--time-zone", "UTC")["string"] == \
        "leaf-(LESS_THAN ts 2024-01-02 18:11:12.5)"


def test_errors_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.properties"
    broken.write_text(f"sarg.pushdown={SARG_X3[:30]}\n")
    proc = run_hsh("sarg", "--job-conf", str(broken))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "job property 'sarg.pushdown' cannot be decoded" in proc.stderr
    empty = tmp_path / "none.properties"
    empty.write_text("mapreduce.job.name=x\n")
    proc = run_hsh("sarg", "--job-conf", str(empty))
    assert proc.returncode == 2 and "has no filter property" in proc.stderr


def test_file_parsers() -> None:
    assert parse_properties("a=1\nb : x\\\n   y\n! c\nc z=w\nd=\\u0041\\tB\ne\n") == \
        {"a": "1", "b": "xy", "c": "z=w", "d": "A\tB", "e": ""}
    assert parse_hadoop_xml("<configuration><property><name>k</name><value>1</value></property>"
                            "<property><name>k</name><value>2</value></property></configuration>") == {"k": "2"}


def test_the_hive_release_whose_format_was_read_is_named(tmp_path: Path) -> None:
    pasted = tmp_path / "job.properties"
    pasted.write_text(f"hive.io.filter.expr.serialized={EXPR_X2_UPPER_Y}\n")
    detected = _json("--job-conf", str(pasted))["kryo_format"]["hive.io.filter.expr.serialized"]
    assert detected.startswith("Hive 2.3.9 and 2.3.10's formats alike (detected")
    named = _json("--job-conf", str(pasted), "--hive-version", "2.3.10")["kryo_format"]
    assert named == {"hive.io.filter.expr.serialized": "Hive 2.3.10's format (named by hsh.hive.writer.version)"}
    proc = run_hsh("sarg", "--job-conf", str(pasted), "--hive-version", "3.1.3")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "Hive '3.1.3'" in proc.stderr and "2.3.9, 2.3.10" in proc.stderr and "auto" in proc.stderr
