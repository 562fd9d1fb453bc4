"""Where the jars of each Hive release the project supports are, for the tests that run Hive's own classes.

Hive 2.3.10 is the running pyspark's (``pyspark/jars``, or ``$SPARK_HOME/jars`` when set). Older releases come from
the pyspark wheel that bundles them, installed in a compatibility virtualenv ``<venvs>/pyspark-<major.minor>/``
(``<venvs>`` is ``$HSH_VENVS`` or ``<repository>/.venvs``; ``make compat`` creates them). A missing folder is a
test FAILURE saying so, not a skip -- a skipped oracle would let a decoder for that release ship unverified --
unless ``HSH_ALLOW_MISSING_COMPAT=1`` is set (then those tests skip).
"""

from __future__ import annotations

import os
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
#: The Hive releases whose Kryo format storage_handler.decode.kryo reads, oldest first.
RELEASES = ("2.3.9", "2.3.10")
#: Release -> the pyspark major.minor whose wheel bundles its jars (None: the running pyspark).
_WHEELS: dict[str, str | None] = {"2.3.9": "3.5", "2.3.10": None}
ALLOW_MISSING = "HSH_ALLOW_MISSING_COMPAT"


def venvs_dir() -> Path:
    return Path(os.environ.get("HSH_VENVS") or REPOSITORY / ".venvs")


def _running_pyspark_jars() -> Path:
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        return Path(spark_home) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def jars_dir(release: str) -> Path:
    """The folder holding ``release``'s ``hive-exec-<release>-core.jar`` and the rest of its wheel's jars
    (it may not exist: see :func:`require_jars`)."""
    if release not in _WHEELS:
        raise ValueError(f"Hive {release} is not one of the supported releases {', '.join(RELEASES)}")
    wheel = _WHEELS[release]
    if wheel is None:
        return _running_pyspark_jars()
    venv = venvs_dir() / f"pyspark-{wheel}"
    found = sorted(venv.glob("lib/python3*/site-packages/pyspark/jars"))
    return found[-1] if found else venv / "lib" / "python3*" / "site-packages" / "pyspark" / "jars"


def missing(release: str) -> str | None:
    """Why ``release``'s jars cannot be used (None when they can)."""
    jars = jars_dir(release)
    if (jars / f"hive-exec-{release}-core.jar").is_file():
        return None
    wheel = _WHEELS[release]
    where = (f"{jars} (the running pyspark's, or $SPARK_HOME's)" if wheel is None
             else f"{jars} (pyspark {wheel}.* in {venvs_dir() / f'pyspark-{wheel}'})")
    return (f"Hive {release}'s jars are missing: no hive-exec-{release}-core.jar in {where}. Run `make compat` "
            f"to create the compatibility virtualenvs (or set {ALLOW_MISSING}=1 to skip these tests)")


def require_jars(release: str) -> Path:
    """``release``'s jars folder; fails the calling test when it is missing (skips it if ``$HSH_ALLOW_MISSING_COMPAT``
    is ``1``)."""
    reason = missing(release)
    if reason is None:
        return jars_dir(release)
    import pytest

    if os.environ.get(ALLOW_MISSING) == "1":
        pytest.skip(reason)
    pytest.fail(reason, pytrace=False)
