"""Which supported Hive release's format Kryo bytes are read in: the one a setting names, or the one the bytes fit.

Kryo's bytes do not say which jars wrote them, and a layout that differs between releases (see
:mod:`.layouts`) would misalign every later byte if the wrong one were used. So:

* a setting names the writer's release (``hsh.hive.writer.version``, the API's ``writer_version``; or the job
  configuration's own ``spark.sql.hive.version``, which Spark's Thrift server and ``spark-sql`` set to the Hive
  they bundle): the bytes are read in that release's format only. If they do not fit it but fit another's, the
  error says so (:class:`ReleaseMismatchError`); a release that cannot be verified here (no jars, e.g. Hive 3.1
  or 4.0) is refused (:class:`UnsupportedReleaseError`): no unverified decoder runs;
* no setting (or ``auto``): every supported release is tried; a result is accepted when exactly one release
  decodes the bytes completely and consistently, or when all that do give the same filter (then it does not
  matter which wrote it; all are reported). Two different filters are refused (:class:`AmbiguousReleaseError`).

Trying every release costs nothing extra for most filters: the reader notes whether it consulted any table entry
that differs between releases (:attr:`~.graph.GraphReader.release_dependent`); when it did not, one reading stands
for all of them. The result says which release's format was decoded (:class:`ReleaseMatch`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from storage_handler.decode.kryo.graph import GraphReader, UnknownClassError
from storage_handler.decode.kryo.layouts import RELEASES, SUPPORTED, Flavor, ReleaseLayouts
from storage_handler.decode.kryo.stream import KryoFormatError
from storage_handler.errors import FilterError
from storage_handler.job_conf import HIVE_WRITER_VERSION, SPARK_HIVE_VERSION

T = TypeVar("T")
AUTO = "auto"
_ALL = "Hive " + " or ".join(SUPPORTED)


class UnsupportedReleaseError(KryoFormatError):
    """A setting names a Hive release whose Kryo format this decoder is not verified against."""


class ReleaseMismatchError(KryoFormatError):
    """The bytes do not decode in the format of the release a setting names (another release's may fit)."""


class AmbiguousReleaseError(KryoFormatError):
    """No release is named and two supported releases decode the bytes into different filters."""


@dataclass(frozen=True, slots=True)
class ReleaseMatch:
    """Which release's format a job property was decoded in.

    ``releases``: the supported releases whose format decodes the bytes to the filter returned (one, or several
    that agree), oldest first. ``named_by``: the setting that named the release; None when the bytes told.
    """

    key: str
    releases: tuple[str, ...]
    named_by: str | None

    def describe(self) -> str:
        """One line, e.g. ``Hive 2.3.10's format (named by hsh.hive.writer.version)``."""
        if self.named_by is not None:
            return f"Hive {self.releases[0]}'s format (named by {self.named_by})"
        if len(self.releases) == 1:
            return f"Hive {self.releases[0]}'s format (detected: no other supported release's format fits the bytes)"
        return (f"Hive {' and '.join(self.releases)}'s formats alike (detected: the bytes hold nothing their "
                "formats write differently)")


@dataclass(frozen=True, slots=True)
class KryoDecoded(Generic[T]):
    """A decoded job property and the release whose format it was decoded in."""

    value: T
    match: ReleaseMatch


@dataclass(frozen=True, slots=True)
class Request:
    """What to decode: ``data`` (the bytes of property ``key``) as ``root`` in ``flavor``, ``convert``ed to our
    model, compared by ``canonical``; ``writer`` says who writes such bytes, for error messages."""

    data: bytes
    key: str
    flavor: Flavor
    root: str
    convert: Callable[[Any], Any]
    canonical: Callable[[Any], str]
    writer: str


class _TooDeep(KryoFormatError):
    """Python's recursion limit was reached: a legitimate but very deep filter (or crafted bytes)."""


def named_release(version: str, named_by: str, key: str) -> ReleaseLayouts | None:
    """The release ``version`` names (None for ``auto``); any other value is refused in one line naming the
    job property ``key`` being decoded."""
    text = version.strip()
    if text.lower() == AUTO:
        return None
    release = RELEASES.get(text)
    if release is None:
        fix = (f"set {HIVE_WRITER_VERSION!r} to one of them, or to {AUTO!r} to let the bytes tell"
               if named_by == SPARK_HIVE_VERSION else f"set it to one of them, or to {AUTO!r} to let the bytes tell")
        raise UnsupportedReleaseError(
            f"job property {key!r} cannot be decoded: {named_by!r} names Hive {text!r}, whose Kryo format this "
            f"decoder is not verified against: the supported releases are {', '.join(SUPPORTED)}; {fix}")
    return release


def decode(request: Request, writer_version: str | None, named_by: str) -> KryoDecoded[Any]:
    """Decode ``request`` in the release ``writer_version`` names, or in the one(s) the bytes fit."""
    release = named_release(writer_version, named_by, request.key) if writer_version is not None else None
    if release is not None:
        return _named(request, release, named_by)
    return _detected(request)


def _attempt(request: Request, release: ReleaseLayouts, label: str) -> tuple[Any, FilterError | None, bool]:
    """(value, None, release-dependent) or (None, error, release-dependent)."""
    reader = GraphReader(request.data, request.flavor, release, label)
    try:
        return request.convert(reader.read_root(request.root)), None, reader.release_dependent
    except RecursionError:
        return None, _TooDeep("the filter is nested too deeply to decode"), reader.release_dependent
    except FilterError as e:
        return None, e, reader.release_dependent


def _named(request: Request, release: ReleaseLayouts, named_by: str) -> KryoDecoded[Any]:
    value, error, dependent = _attempt(request, release, release.name)
    if error is None:
        return KryoDecoded(value, ReleaseMatch(request.key, (release.version,), named_by))
    if not dependent:  # fails the same way in every release's format: not a question of the release
        raise failure(request.key, request.writer, error) from error
    fits = [f"Hive {version}" for version in SUPPORTED if version != release.version
            and _attempt(request, RELEASES[version], f"Hive {version}")[1] is None]
    hint = (f"it does decode in the format of {' and of '.join(fits)}" if fits
            else "no other supported release's format decodes it either")
    raise ReleaseMismatchError(
        f"job property {request.key!r} cannot be decoded in {release.name}'s format, which {named_by!r} names: "
        f"{error}; {hint}. Set {named_by!r} to the release that wrote it (supported: {', '.join(SUPPORTED)})"
    ) from error


def _detected(request: Request) -> KryoDecoded[Any]:
    releases = list(RELEASES.values())
    value, error, dependent = _attempt(request, releases[0], _ALL)
    if not dependent:  # nothing read depends on the release: this reading is every release's
        if error is not None:
            raise failure(request.key, request.writer, error) from error
        return KryoDecoded(value, ReleaseMatch(request.key, SUPPORTED, None))
    # The first reading's value is the first release's own (the label only words errors): reuse it.
    outcomes = {release.version: (value, error, dependent) if release is releases[0] and error is None
                else _attempt(request, release, release.name) for release in releases}
    decoded = {version: v for version, (v, e, _) in outcomes.items() if e is None}
    if not decoded:
        errors = [e for _, e, _ in outcomes.values() if e is not None]
        kind = UnknownClassError if all(isinstance(e, UnknownClassError) for e in errors) else KryoFormatError
        detail = "; ".join(f"as Hive {version}'s: {outcomes[version][1]}" for version in SUPPORTED)
        raise kind(f"job property {request.key!r} cannot be decoded in any supported Hive release's format "
                   f"({detail}). It must hold what {request.writer} writes (base64 Kryo); remove the property, "
                   "or set it again from the query")
    meanings = {request.canonical(v) for v in decoded.values()}
    matched = tuple(version for version in SUPPORTED if version in decoded)
    if len(meanings) > 1:
        raise AmbiguousReleaseError(
            f"job property {request.key!r} decodes to different filters in the formats of Hive "
            f"{' and '.join(matched)}; set {HIVE_WRITER_VERSION!r} to the release that wrote it")
    return KryoDecoded(decoded[matched[0]], ReleaseMatch(request.key, matched, None))


def failure(key: str, writer: str, error: FilterError) -> KryoFormatError:
    """``error`` as one message naming the job property ``key`` and who writes what it must hold."""
    if isinstance(error, _TooDeep):
        return KryoFormatError(f"job property {key!r}: {error}")
    kind = UnknownClassError if isinstance(error, UnknownClassError) else KryoFormatError
    return kind(f"job property {key!r} cannot be decoded: {error}. It must hold what {writer} writes (base64 "
                "Kryo); remove the property, or set it again from the query")
