"""``hsh scan|explain|sarg|index``: see what the handler prunes, and maintain the index."""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape

from storage_handler.cli.common import (
    add_footer_options,
    add_json_option,
    add_metastore_option,
    add_statistics_options,
    footer_engine,
    metastore_uri,
    statistics_choice,
)
from storage_handler.cli.output import (
    footer_progress,
    out,
    print_json,
    print_mapping,
    print_rows,
    say,
    statistics_line,
    warn_statistics,
    warn_unreadable,
)
from storage_handler.errors import ConfigurationError


def add_commands(sub: Any) -> None:
    for name, helptext in (("scan", "list the files a filter keeps, with kept/total files and bytes"),
                           ("explain", "like scan, and show which leaf ruled out a sample of pruned files")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("table", metavar="DB.TABLE")
        p.add_argument("--where", help="HiveQL predicate, e.g. \"event_id = 1 and dt >= '2024-01-02'\"")
        if name == "explain":
            p.add_argument("--sample", type=int, default=5, help="pruned files to explain (default 5)")
        add_metastore_option(p)
        add_json_option(p)
        p.set_defaults(func=_scan, explain=name == "explain")

    p = sub.add_parser("sarg", help="show the SearchArgument Hive would build for a filter, or read from a job")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--where", help="HiveQL predicate")
    what.add_argument("--job-conf", metavar="FILE",
                      help="job properties (Hadoop job.xml, or key=value lines such as what Hive logged; - for stdin):"
                           " decode hive.io.filter.expr.serialized / sarg.pushdown / hsh.* as a reader would")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--schema", help="column list, e.g. 'a int, b string, d date'")
    source.add_argument("--table", metavar="DB.TABLE", help="take the schema from a registered table")
    p.add_argument("--time-zone", metavar="ZONE",
                   help="with --job-conf: zone of the JVM that wrote the filter (overrides hsh.filter.time.zone; "
                        "default UTC)")
    p.add_argument("--hive-version", metavar="RELEASE",
                   help="with --job-conf: the Hive release that wrote Kryo bytes (2.3.9, 2.3.10 or auto; overrides "
                        "hsh.hive.writer.version; default: spark.sql.hive.version if set, else auto: the bytes tell)")
    add_metastore_option(p)
    add_json_option(p)
    p.set_defaults(func=_sarg)

    p = sub.add_parser("index", help="maintain the column-statistics index")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("refresh", help="read only new or changed files' footers; drop deleted files")
    a.add_argument("table", metavar="DB.TABLE")
    a.add_argument("--strict", action="store_true",
                   help="refuse files that are not readable Parquet (truncated, not Parquet, empty) instead of "
                        "recording them as unreadable and keeping them in every scan; a refusal changes nothing")
    add_statistics_options(a)
    add_metastore_option(a)
    add_json_option(a)
    add_footer_options(a)
    a.set_defaults(func=_index_refresh)


def table_desc(args: argparse.Namespace, name_text: str) -> Any:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.table_desc import TableDesc

    name = parse_table_name(name_text)
    with MetastoreClient(metastore_uri(args)) as client:
        return TableDesc.from_hms(client.get_table(name.database, name.table), client.uris)


def _unregistered(args: argparse.Namespace, desc: Any) -> int:
    """How many partition folders under the table hold files but are no registered partition (a hint)."""
    from metastore.client import MetastoreClient
    from storage_handler.catalog import unregistered_folders
    from storage_handler.storage import s3a_settings, storage_for

    if not desc.partition_keys:
        return 0
    database, _, table = desc.name.partition(".")
    with MetastoreClient(metastore_uri(args)) as client:
        names = client.get_partition_names(database, table)
    storage = storage_for(desc.location, s3a_settings(desc.parameters))
    return len(unregistered_folders(desc.location, [k for k, _ in desc.partition_keys], names, storage=storage))


def _scan(args: argparse.Namespace) -> int:
    from storage_handler.handler import list_status_for
    from storage_handler.stats.columns import PATH

    desc = table_desc(args, args.table)
    result, _props = list_status_for(desc, args.where)
    m = result.metrics
    data: dict[str, Any] = {**m.as_dict(), "kept_paths": [f.path for f in result.files]}
    data["unregistered_partition_folders"] = _unregistered(args, desc)
    if args.explain and result.evaluator is not None and result.scan is not None:
        kept = {f.path for f in result.files}
        paths = result.scan.column(PATH).to_pylist()
        pruned = [i for i, p in enumerate(paths) if p not in kept][: args.sample]
        data["pruned_sample"] = [
            {"path": paths[i], "because": [str(r) for r in result.evaluator.explain(result.scan, i).reasons]}
            for i in pruned
        ]
    if args.json:
        print_json(data)
        return 0
    out.print(f"[bold]SearchArgument[/bold] {escape(m.sarg)}", highlight=False)
    pct = 100 * m.bytes_kept / m.bytes_total if m.bytes_total else 100.0
    parts = f"partitions kept {m.partitions_kept}/{m.partitions_total}; " if desc.partition_keys else ""
    # the index is not read when the partitions alone decide (no data filter, or nothing left to check)
    index = "not read" if m.index_version is None else m.index_version
    out.print(f"{parts}kept [bold]{m.files_kept}[/bold]/{m.files_total} files listed (in the kept partitions), "
              f"{m.bytes_kept}/{m.bytes_total} bytes ({pct:.1f}%); every row matching in {m.files_matched_fully} of "
              f"them; files without stats {m.files_without_stats}; index version {index}", highlight=False)
    if m.files_kept_unindexed:
        out.print(f"lag: {m.files_kept_unindexed} kept files ({m.bytes_kept_unindexed} bytes) are not in the index "
                  f"yet (new or changed since it was updated), so they are read whatever they hold; `hsh index "
                  f"refresh {desc.name}` or a running `hsh follow` indexes them", highlight=False)
    if data["unregistered_partition_folders"]:
        out.print(f"hint: {data['unregistered_partition_folders']} partition folder(s) under the table hold files "
                  f"but are not registered, so they are not part of the table; `hsh sync {desc.name}` adds them",
                  highlight=False)
    print_rows(["kept path"], [(p,) for p in data["kept_paths"]])
    if "pruned_sample" in data:
        print_rows(["pruned path", "ruled out by"],
                   [(s["path"], "; ".join(s["because"])) for s in data["pruned_sample"]])
    return 0


def _sarg(args: argparse.Namespace) -> int:
    from storage_handler.decode.hiveql import parse_filter
    from storage_handler.decode.serialized import decode_job_conf_filter, filter_sources
    from storage_handler.decode.to_sarg import to_search_argument
    from storage_handler.expr.render import to_hiveql
    from storage_handler.job_conf import FILTER_TIME_ZONE, HIVE_WRITER_VERSION, read_job_conf_file
    from storage_handler.types import parse_schema_text

    schema = None
    if args.table:
        schema = table_desc(args, args.table).schema
    elif args.schema is not None:
        schema = parse_schema_text(args.schema)
        if not schema:
            raise ConfigurationError("--schema is empty; give columns like 'a int, b string'")
    elif args.where is not None:
        raise ConfigurationError("--where needs the columns: give --schema 'a int, ...' or --table DB.TABLE")
    sources: dict[str, Any] = {}
    if args.job_conf is not None:
        props = read_job_conf_file(args.job_conf)
        if args.time_zone:
            props[FILTER_TIME_ZONE] = args.time_zone
        if args.hive_version:
            props[HIVE_WRITER_VERSION] = args.hive_version
        sarg_key, expression_key = filter_sources(props)
        if sarg_key is None:
            raise ConfigurationError(
                f"{args.job_conf} has no filter property (hive.io.filter.expr.serialized, sarg.pushdown, "
                "hive.io.filter.text, hsh.sarg or hsh.filter.expr)"
            )
        found = decode_job_conf_filter(props, schema)
        decoded = found.decoded
        sources = {"sarg_from": sarg_key, "expression_from": expression_key}
        if found.kryo_formats:  # which Hive release's Kryo format each serialized property was read in
            sources["kryo_format"] = {m.key: m.describe() for m in found.kryo_formats}
    else:
        assert schema is not None
        decoded = to_search_argument(parse_filter(args.where, schema))
    sarg = decoded.sarg
    data = {
        **sources,
        "old_string": sarg.to_old_string(),
        "string": sarg.to_string(),
        "leaves": [str(leaf) for leaf in sarg.leaves],
        "compact_expression": str(sarg.compact_expression),
        "pushed": to_hiveql(decoded.pushed) if decoded.pushed is not None else None,
        "residual": to_hiveql(decoded.residual) if decoded.residual is not None else None,
        "not_pushed": [to_hiveql(e) for e in decoded.unpushed],
    }
    if args.json:
        print_json(data)
    else:
        print_mapping(data, title="SearchArgument")
    return 0


def _index_refresh(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.handler import StorageHandler
    from storage_handler.registration import hooked
    from storage_handler.registration.dataset import StrictEngine
    from storage_handler.registration.describe import unreadable_files
    from storage_handler.stats import load
    from storage_handler.stats.engines.memory import use_lean_allocator
    from storage_handler.storage import s3a_settings

    use_lean_allocator()  # before the job allocates: less memory kept resident (see stats/memory.py)

    name = parse_table_name(args.table)
    with MetastoreClient(metastore_uri(args)) as client, footer_progress(enabled=not args.json) as footers:
        hook = StorageHandler().get_meta_hook()
        engine = footer_engine(args)
        # --strict: an unreadable footer stops the refresh before it commits or alters the table
        hook.progress, hook.engine = footers, StrictEngine(engine) if args.strict else engine
        table, _locked = hooked.refresh_table(client, name.database, name.table, hook,
                                              statistics=statistics_choice(args))
    diff = hook.last_diff
    report = getattr(hook, "last_statistics", None)  # set by refresh_table's publish
    statistics = report.as_dict() if report is not None else {"publish": False, "table_level": "off"}
    snapshot = load(table.sd.location, membership=(), conf=s3a_settings(table.parameters))
    data = {
        "table": str(name), "index_version": int(table.parameters.get("hsh.index.version", 0)),
        "added": list(diff.added), "changed": list(diff.changed), "removed": list(diff.removed),
        "retried": list(diff.retried), "full_rebuild": diff.full_rebuild,
        "membership_changed": diff.membership_changed, "membership_read": list(diff.membership_read),
        "unreadable_files": unreadable_files(snapshot.table if snapshot is not None else None),
        "statistics": statistics,
    }
    warn_unreadable(data["unreadable_files"])
    warn_statistics(statistics)
    if args.json:
        print_json(data)
    else:
        say(f"index of {name} at version {data['index_version']}: {len(diff.added)} added, "
            f"{len(diff.changed)} changed, {len(diff.removed)} removed"
            + (" (full rebuild: the columns changed)" if diff.full_rebuild else "")
            + (f"; bloom filters / value lists changed, read for unchanged files: "
               f"{', '.join(diff.membership_read) or 'nothing'}" if diff.membership_changed else ""))
        say(f"statistics: {statistics_line(statistics)}")
        for kind in ("added", "changed", "removed"):
            for path in data[kind]:
                out.print(f"  {kind:8} {escape(path)}", highlight=False)
    return 0
